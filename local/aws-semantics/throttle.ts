import { ProvisionedThroughputExceededException, ThrottlingException, TransactionCanceledException, type CancellationReason } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * The `throttle` switch of FLEETWARD_AWS_SEMANTICS: a share of DynamoDB calls fail as AWS fails them under load,
 * which DynamoDB Local never does. The failures sit inside the SDK's retry loop, as a real answer would: the SDK
 * retries a throttled call by itself, and the store retries what the SDK does not (a transaction cancelled for a
 * `ThrottlingError`, a batch's unprocessed items).
 */
export interface ThrottleOptions {
  /** Share of calls that fail, 0..1 (AWS semantics default: 0.02). */
  share: number;
  /** Seeded, so a failing run can be replayed. */
  random: () => number;
}

const metadata = () => ({ $metadata: { httpStatusCode: 400, attempts: 1, totalRetryDelay: 0 } });

/** What DynamoDB answers a call it throttles, by the call. */
function throttleFor(command: string, random: () => number): Error {
  if (/^Transact(Write|Get)(Items)?Command$/.test(command)) {
    const reason: CancellationReason = { Code: random() < 0.5 ? 'ThrottlingError' : 'None', Message: 'Throughput exceeds the current capacity' };
    // At least one item throttled, the rest not evaluated: as AWS reports a cancellation for throttling.
    return new TransactionCanceledException({
      message: 'Transaction cancelled, please refer cancellation reasons for specific reasons [ThrottlingError]',
      CancellationReasons: [{ Code: 'ThrottlingError', Message: reason.Message }, reason],
      ...metadata(),
    });
  }
  return random() < 0.5
    ? new ThrottlingException({ message: 'Throughput exceeds the current capacity for one or more global secondary indexes', ...metadata() })
    : new ProvisionedThroughputExceededException({ message: 'The level of configured provisioned throughput for the table was exceeded', ...metadata() });
}

interface BatchWriteInput {
  RequestItems?: Record<string, unknown[]>;
}
interface BatchWriteOutput {
  UnprocessedItems?: Record<string, unknown[]>;
}

/** Keeps a share of a batch's items from DynamoDB and hands them back as unprocessed, as a throttled batch does. */
async function partlyProcessed(input: BatchWriteInput, send: (input: BatchWriteInput) => Promise<BatchWriteOutput>, random: () => number) {
  const kept: Record<string, unknown[]> = {};
  const sent: Record<string, unknown[]> = {};
  for (const [table, requests] of Object.entries(input.RequestItems ?? {})) {
    // Never the whole batch: DynamoDB processes what it can.
    const cut = 1 + Math.floor(random() * Math.max(1, requests.length - 1));
    sent[table] = requests.slice(0, cut);
    if (cut < requests.length) kept[table] = requests.slice(cut);
  }
  const output = await send({ ...input, RequestItems: sent });
  const unprocessed = { ...output.UnprocessedItems };
  for (const [table, requests] of Object.entries(kept)) unprocessed[table] = [...(unprocessed[table] ?? []), ...requests];
  return { ...output, UnprocessedItems: unprocessed };
}

/** How many calls were failed, and batches cut short, so a run can show that the switch bit. */
export interface ThrottleStats {
  throttled: number;
  partlyProcessed: number;
}

const isBatchWrite = (command: unknown) => command === 'BatchWriteCommand' || command === 'BatchWriteItemCommand';

export function injectThrottles(client: DynamoDBDocumentClient, { share, random }: ThrottleOptions): ThrottleStats {
  const stats: ThrottleStats = { throttled: 0, partlyProcessed: 0 };
  // Unprocessed items are decided on the document client's input, before the items are marshalled.
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (!isBatchWrite(context.commandName) || random() >= share) return next(args);
      stats.partlyProcessed++;
      const output = await partlyProcessed(args.input as BatchWriteInput, async (input) => (await next({ ...args, input })).output as BatchWriteOutput, random);
      return { output, response: undefined } as never;
    },
    { step: 'initialize', name: 'awsSemanticsUnprocessedItems', priority: 'high' },
  );
  // Failures inside the SDK's retry loop (the deserialize step runs once per attempt), as a real throttle is met.
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (isBatchWrite(context.commandName) || random() >= share) return next(args);
      stats.throttled++;
      throw throttleFor(String(context.commandName), random);
    },
    { step: 'deserialize', name: 'awsSemanticsThrottle', priority: 'high' },
  );
  return stats;
}
