import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { CapacityMeter } from '#store/fleet-store.ts';
import type { Cost } from './stats.ts';

export interface RequestCounter {
  /** Requests sent so far, by command name (GetItemCommand, QueryCommand, TransactWriteItemsCommand, ...). */
  counts: Record<string, number>;
  /** Requests sent and not yet answered. */
  inFlight(): number;
}

/**
 * Counts the DynamoDB requests a document client sends, by command name, through an SDK middleware: no change to
 * the store, and the counts line up with FleetStore's meter (which only knows capacity and writes).
 */
export function countRequests(client: DynamoDBDocumentClient, name = 'fleetward-bench-request-counter'): RequestCounter {
  const counts: Record<string, number> = {};
  let pending = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = context.commandName ?? 'unknown';
      counts[command] = (counts[command] ?? 0) + 1;
      pending++;
      try {
        return await next(args);
      } finally {
        pending--;
      }
    },
    { step: 'initialize', name },
  );
  return { counts, inFlight: () => pending };
}

/** A snapshot of a store's meter and its request counts, to subtract later. */
export function snapshot(meter: CapacityMeter, requests: RequestCounter): Cost {
  return { writes: meter.writes, writeUnits: meter.writeUnits, readUnits: meter.readUnits, requests: { ...requests.counts } };
}
