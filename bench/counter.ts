import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { CapacityMeter } from '#store/fleet-store.ts';
import type { Cost } from './stats.ts';

/**
 * Counts the DynamoDB requests a document client sends, by command name, through an SDK middleware: no change to
 * the store, and the counts line up with FleetStore's meter (which only knows capacity and writes).
 */
export function countRequests(client: DynamoDBDocumentClient, name = 'fleetward-bench-request-counter'): Record<string, number> {
  const counts: Record<string, number> = {};
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = context.commandName ?? 'unknown';
      counts[command] = (counts[command] ?? 0) + 1;
      return next(args);
    },
    { step: 'initialize', name },
  );
  return counts;
}

/** A snapshot of a store's meter and its request counts, to subtract later. */
export function snapshot(meter: CapacityMeter, requests: Record<string, number>): Cost {
  return { writes: meter.writes, writeUnits: meter.writeUnits, readUnits: meter.readUnits, requests: { ...requests } };
}
