import type { CapacityCount, OrgCapacity } from '#domain/capacity/org-capacity.ts';

// An org's capacity over time: one point per org per interval, taken by the sweep from the org's counters (as
// `GET .../capacity` reads them) and written only if that interval has none yet, so overlapping or repeated sweeps
// take it once. Points are kept for CAPACITY_HISTORY_DAYS (then expired by the table's TTL).

/** What a point keeps of each machine type: the four counts, in machines and GPUs. */
export interface CapacityPointCounts {
  delivered: CapacityCount;
  healthy: CapacityCount;
  reserved: CapacityCount;
  inUse: CapacityCount;
}

export interface CapacityPoint {
  org: string;
  /** The start of the interval the point stands for (ISO, UTC); the sweep took it within that interval. */
  at: string;
  byType: Record<string, CapacityPointCounts>;
}

export const CAPACITY_HISTORY_DAYS = 30;
const DAY_MS = 86_400_000;

/** The start of the interval `now` falls in: intervals of `intervalSeconds` from the epoch. */
export function capacityIntervalOf(now: Date, intervalSeconds: number): string {
  const ms = intervalSeconds * 1000;
  return new Date(Math.floor(now.getTime() / ms) * ms).toISOString();
}

/** The org's capacity as a point of its history, at `at`. */
export function capacityPoint(org: string, capacity: OrgCapacity, at: string): CapacityPoint {
  const byType = Object.fromEntries(
    Object.entries(capacity.byType).map(([type, t]) => [type, { delivered: t.delivered, healthy: t.healthy, reserved: t.reserved, inUse: t.inUse }]),
  );
  return { org, at, byType };
}

/** When a point may be dropped: epoch seconds, as DynamoDB's TTL reads them. */
export const capacityPointExpiry = (at: string): number => Math.floor((Date.parse(at) + CAPACITY_HISTORY_DAYS * DAY_MS) / 1000);

/** Where a history read starts when the caller names no `since`: a day back. */
export const defaultHistorySince = (now: Date): string => new Date(now.getTime() - DAY_MS).toISOString();

// What a Change carries of this file's records (core/change.ts).
declare module '#domain/core/change.ts' {
  interface Change {
    /** Points of orgs' capacity history, each written only if its interval has none. */
    capacityPoints?: CapacityPoint[];
  }
}
