import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import type { Log } from './context.ts';

export interface FleetEvent {
  type: string;
  detail: Record<string, unknown>;
}

/** Where repair automation is told what happened: EventBridge in AWS, an in-process bus locally. */
export interface EventPublisher {
  publish(event: FleetEvent): Promise<void>;
}

export const EVENT_SOURCE = 'fleetward';

export function eventBridgePublisher(busName: string, client = new EventBridgeClient({})): EventPublisher {
  return {
    async publish(event) {
      const result = await client.send(
        new PutEventsCommand({
          Entries: [{ EventBusName: busName, Source: EVENT_SOURCE, DetailType: event.type, Detail: JSON.stringify(event.detail) }],
        }),
      );
      if (result.FailedEntryCount) throw new Error(`EventBridge refused ${event.type}: ${result.Entries?.[0]?.ErrorMessage ?? 'unknown error'}`);
    },
  };
}

export type Subscriber = (event: FleetEvent) => void | Promise<void>;

/** The local stand-in for the event bus: logs each delivery and hands it to in-process subscribers. */
export function inProcessBus(log: Log): EventPublisher & { subscribe(subscriber: Subscriber): () => void; delivered: FleetEvent[] } {
  const subscribers = new Set<Subscriber>();
  const delivered: FleetEvent[] = [];
  return {
    delivered,
    subscribe(subscriber) {
      subscribers.add(subscriber);
      return () => subscribers.delete(subscriber);
    },
    async publish(event) {
      delivered.push(event);
      log.info(`event ${event.type} delivered`, { machineId: event.detail.machineId });
      for (const subscriber of subscribers) await subscriber(event);
    },
  };
}
