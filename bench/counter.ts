import type { ConsumedCapacity } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient, PutCommandInput, TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { zeroCost, type Cost } from './stats.ts';
import { putWriteUnits, transactionWriteUnits } from './write-units.ts';

const WRITE_COMMANDS = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand', 'TransactWriteItemsCommand', 'BatchWriteItemCommand']);

export interface RequestCounter {
  /** Everything the client sent, by command name (GetItemCommand, QueryCommand, TransactWriteItemsCommand, ...). */
  counts: Record<string, number>;
  /**
   * Everything the client's answered requests cost: successful write requests and their units, read units of the
   * rest. On a client only the store sends through, this is the store's capacity meter.
   */
  total: Cost;
  /** Requests sent and not yet answered. */
  inFlight(): number;
  /** What was sent on behalf of one tag (see `tagOf`), with the capacity DynamoDB reported for it; forgets it. */
  take(tag: string): Cost;
}

/** Capacity units in a response's ConsumedCapacity (one entry, or one per table for transactions). */
export function units(consumed: ConsumedCapacity | ConsumedCapacity[] | undefined): number {
  const list = Array.isArray(consumed) ? consumed : consumed ? [consumed] : [];
  return list.reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0);
}

export interface CounterOptions {
  /** Names who is asking (an AsyncLocalStorage store, say): requests made under a tag are also tallied for it. */
  tagOf?: () => string | undefined;
  /**
   * Which requests ask DynamoDB for their ConsumedCapacity (the store never does), asked at each request: all by
   * default. Fewer where a wall time is judged, because DynamoDB Local takes markedly longer to answer with
   * capacity (10,000 machines in BatchWriteItem: 7.1 s plain, 8.6 s with it).
   */
  capacity?: () => CapacityMetering;
}

/** Meter every request's capacity, only write requests' (reads then count 0 units), or none. */
export type CapacityMetering = 'all' | 'writes' | 'none';

/**
 * Counts the DynamoDB requests a document client sends through an SDK middleware, with no change to the store, and
 * meters the capacity each response reports (write requests and their units, read units of reads) in `total`.
 */
export function countRequests(client: DynamoDBDocumentClient, { tagOf = () => undefined, capacity = () => 'all' }: CounterOptions = {}): RequestCounter {
  const total = zeroCost();
  const counts = total.requests;
  const tagged = new Map<string, Cost>();
  let pending = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = context.commandName ?? 'unknown';
      const metering = capacity();
      const metered = metering === 'all' || (metering === 'writes' && WRITE_COMMANDS.has(command));
      // DynamoDB Local's figure for a transaction is one item's: what DynamoDB would charge is computed instead, for
      // puts too (one rule for every write the store sends), and those never ask for it (which would slow DynamoDB
      // Local down for nothing).
      const computed = metered ? computedUnits(command, args.input) : undefined;
      if (metered && computed === undefined) (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'TOTAL';
      counts[command] = (counts[command] ?? 0) + 1;
      const tag = tagOf();
      let cost: Cost | undefined;
      if (tag !== undefined) {
        cost = tagged.get(tag) ?? zeroCost();
        tagged.set(tag, cost);
        cost.requests[command] = (cost.requests[command] ?? 0) + 1;
      }
      pending++;
      try {
        const result = await next(args);
        // A write request and its units count once it succeeded.
        const consumed = computed ?? units((result.output as { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] }).ConsumedCapacity);
        for (const into of cost ? [total, cost] : [total]) {
          if (WRITE_COMMANDS.has(command)) {
            into.writes += 1;
            into.writeUnits += consumed;
          } else {
            into.readUnits += consumed;
          }
        }
        return result;
      } finally {
        pending--;
      }
    },
    { step: 'initialize', name: 'fleetward-bench-request-counter' },
  );
  return {
    counts,
    total,
    inFlight: () => pending,
    take(tag) {
      const cost = tagged.get(tag) ?? zeroCost();
      tagged.delete(tag);
      return cost;
    },
  };
}

/** A snapshot of a client's metered cost and its request counts, to subtract later. */
export function snapshot(requests: RequestCounter): Cost {
  return { ...requests.total, requests: { ...requests.counts } };
}

function computedUnits(command: string, input: unknown): number | undefined {
  if (command === 'TransactWriteItemsCommand') return transactionWriteUnits(input as TransactWriteCommandInput);
  if (command === 'PutItemCommand') return putWriteUnits(input as PutCommandInput);
  return undefined;
}
