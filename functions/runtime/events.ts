import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { deliveryEntry, publishedEvent, type OutboxEntry, type PublishedEvent } from '#domain/events/events.ts';
import { iso } from '#domain/core/time.ts';
import type { AppContext, Log } from '#runtime/context.ts';
import { CORRELATION_KEY } from '#runtime/request-scope.ts';

/** Where repair automation is told what happened: EventBridge in AWS, an in-process bus locally. */
export interface EventPublisher {
  publish(event: PublishedEvent): Promise<void>;
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

export type Subscriber = (event: PublishedEvent) => void | Promise<void>;

/** The local stand-in for the event bus: logs each delivery and hands it to in-process subscribers. */
export function inProcessBus(log: Log): EventPublisher & { subscribe(subscriber: Subscriber): () => void; delivered: PublishedEvent[] } {
  const subscribers = new Set<Subscriber>();
  const delivered: PublishedEvent[] = [];
  return {
    delivered,
    subscribe(subscriber) {
      subscribers.add(subscriber);
      return () => subscribers.delete(subscriber);
    },
    async publish(event) {
      delivered.push(event);
      const requestId = event.detail.requestId;
      log.info(`event ${event.type} delivered`, {
        id: event.detail.id,
        machineId: event.detail.machineId,
        ...(typeof requestId === 'string' ? { [CORRELATION_KEY]: requestId } : {}),
      });
      for (const subscriber of subscribers) await subscriber(event);
    },
  };
}

/**
 * Deliver an outbox entry's event to repair automation, then record the delivery once. The event's id comes from
 * the entry's key, so a duplicated or reordered stream record publishes it again with the same id (delivery is at
 * least once; consumers dedupe on `id`), while the conditional delivery marker keeps `event-delivered` to one entry.
 */
export async function deliverOutboxEvent(ctx: AppContext, outbox: OutboxEntry): Promise<void> {
  const event = publishedEvent(outbox);
  await ctx.events.publish(event);
  const recorded = await ctx.store.recordEventDelivery(event.detail.id, deliveryEntry(outbox, event, iso(ctx.clock.now())));
  if (!recorded) ctx.log.info(`event ${event.type} was delivered before`, { id: event.detail.id, machineId: outbox.entry.machineId });
}
