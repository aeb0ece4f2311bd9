import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { sharedTracer } from '#handlers/lambda-context.ts';
import { eventBridgePublisher, type EventPublisher } from '#runtime/events.ts';

/**
 * Where the functions that deliver the outbox (the stream, and the sweep for what the stream left undelivered)
 * publish repair events. The client is built at the first event, not at a cold start: most invocations carry none.
 */
export function repairEvents(busName: string): EventPublisher {
  let publisher: EventPublisher | undefined;
  return {
    publish: (event) => (publisher ??= eventBridgePublisher(busName, sharedTracer.captureAWSv3Client(new EventBridgeClient({})))).publish(event),
  };
}
