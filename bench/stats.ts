/** Latency and cost arithmetic for the benchmark: nearest-rank percentiles, deltas of capacity meters. */

export interface LatencySummary {
  unit: 'ms';
  samples: number;
  median: number;
  p99: number;
  mean: number;
  min: number;
  max: number;
}

/** Nearest-rank percentile of an ascending list (p in 0..100). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

export function summarize(samples: readonly number[]): LatencySummary {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((sum, x) => sum + x, 0) / Math.max(1, sorted.length);
  return {
    unit: 'ms',
    samples: sorted.length,
    median: round(percentile(sorted, 50)),
    p99: round(percentile(sorted, 99)),
    mean: round(mean),
    min: round(sorted[0] ?? Number.NaN),
    max: round(sorted.at(-1) ?? Number.NaN),
  };
}

export function round(value: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

export function ratio(a: number, b: number): number {
  return b > 0 ? round(a / b) : Number.NaN;
}

/** What one operation (or a stretch of them) cost, as the request counter metered it (bench/counter.ts). */
export interface Cost {
  writes: number;
  writeUnits: number;
  readUnits: number;
  /** DynamoDB requests by command name (GetItemCommand, QueryCommand, TransactWriteItemsCommand, ...). */
  requests: Record<string, number>;
}

export const zeroCost = (): Cost => ({ writes: 0, writeUnits: 0, readUnits: 0, requests: {} });

export function addCost(into: Cost, add: Cost): Cost {
  into.writes += add.writes;
  into.writeUnits += add.writeUnits;
  into.readUnits += add.readUnits;
  for (const [name, n] of Object.entries(add.requests)) into.requests[name] = (into.requests[name] ?? 0) + n;
  return into;
}

export function subtractCost(after: Cost, before: Cost): Cost {
  const requests: Record<string, number> = {};
  for (const [name, n] of Object.entries(after.requests)) {
    const d = n - (before.requests[name] ?? 0);
    if (d !== 0) requests[name] = d;
  }
  return {
    writes: after.writes - before.writes,
    writeUnits: after.writeUnits - before.writeUnits,
    readUnits: after.readUnits - before.readUnits,
    requests,
  };
}

/** Totals divided by the number of operations, with the spread of the per-operation write figures. */
export function perOperation(costs: readonly Cost[]) {
  const total = costs.reduce((sum, c) => addCost(sum, c), zeroCost());
  const n = Math.max(1, costs.length);
  const writes = costs.map((c) => c.writes);
  const units = costs.map((c) => c.writeUnits);
  return {
    operations: costs.length,
    write_units_per_op: { unit: 'write capacity units per operation', value: round(total.writeUnits / n) },
    writes_per_op: { unit: 'DynamoDB write requests per operation (a transaction counts as one)', value: round(total.writes / n) },
    read_units_per_op: { unit: 'read capacity units per operation', value: round(total.readUnits / n) },
    requests_per_op: {
      unit: 'DynamoDB requests per operation, by command',
      value: Object.fromEntries(
        Object.entries(total.requests)
          .sort()
          .map(([name, count]) => [name, round(count / n)]),
      ),
    },
    spread: {
      unit: 'per-operation min..max',
      writes: [Math.min(...writes), Math.max(...writes)],
      write_units: [Math.min(...units), Math.max(...units)],
    },
    totals: { writes: total.writes, write_units: round(total.writeUnits), read_units: round(total.readUnits) },
  };
}

/**
 * Idle time before every timed call, API and floor alike. What runs just before a call matters on a small host: a
 * request right after other DynamoDB traffic is faster than one after a pause (threads parked, caches cold), and the
 * two sides would otherwise differ in that (the API side waits for the site to go quiet, the floor does untimed
 * writes), skewing the ratios one way for create and the other for release.
 */
export const settle = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
