import { randomUUID } from 'node:crypto';
import { EventBridgeClient, type PutEventsRequestEntry, type PutEventsResultEntry } from '@aws-sdk/client-eventbridge';

/** A rule on the local bus: which entries it takes, and its target. */
export interface LocalEventRule {
  matches(entry: PutEventsRequestEntry): boolean;
  deliver(entry: PutEventsRequestEntry): void | Promise<void>;
}

/**
 * An EventBridge client for the local runner: the functions' real publishing code (eventBridgePublisher,
 * eventBridgeHandOff) sends its PutEvents through it as in AWS, and instead of the network the entries go to the
 * rules' in-process targets (the repair-event bus, the sweep's follow-up). What a function puts on the bus is then a
 * real EventBridge call, seen by the AWS call recorder like any other.
 */
export function localEventBridge(busName: string, rules: LocalEventRule[]): EventBridgeClient {
  const client = new EventBridgeClient({ region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  client.middlewareStack.add(
    (_next, context) => async (args) => {
      if (context.commandName !== 'PutEventsCommand') throw new Error(`the local event bus serves PutEvents only, not ${context.commandName}`);
      const entries = (args.input as { Entries?: PutEventsRequestEntry[] }).Entries ?? [];
      const results: PutEventsResultEntry[] = [];
      for (const entry of entries) {
        if (entry.EventBusName !== busName) {
          results.push({ ErrorCode: 'NotFoundException', ErrorMessage: `no event bus ${entry.EventBusName ?? 'default'} here (the site's is ${busName})` });
          continue;
        }
        // Every matching rule gets the entry, as with EventBridge; none matching drops it, as there.
        for (const rule of rules) if (rule.matches(entry)) await rule.deliver(entry);
        results.push({ EventId: randomUUID() });
      }
      const failed = results.filter((result) => result.ErrorCode).length;
      return { output: { $metadata: {}, FailedEntryCount: failed, Entries: results }, response: {} } as never;
    },
    // Last of its step: the recorder (and any other middleware) sees the call first; nothing after it is sent.
    { step: 'initialize', priority: 'low', name: 'localEventBusDelivery' },
  );
  return client;
}
