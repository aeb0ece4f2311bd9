import type { Change } from '#domain/core/change.ts';
import type { Instance, Machine } from '#domain/core/model.ts';
import { registry } from '#reconcilers/registry.ts';
import { startRun } from '#reconcilers/runner.ts';
import type { Harness } from '#test/support/service-harness.ts';

// The table stream as a service test plays it: services do not reconcile, so every machine and instance record they
// commit is recorded, then handed to the reconcilers out of order, some twice, in concurrent batches, as Lambda may.

export type StreamRecord = { kind: 'machine'; before: Machine | null; after: Machine } | { kind: 'instance'; before: Instance | null; after: Instance };

/** Every machine and instance record committed from now on, as the table stream would carry it. */
export function recordStream(h: Harness): StreamRecord[] {
  const records: StreamRecord[] = [];
  const commit = h.store.commit.bind(h.store);
  h.store.commit = async (change: Change) => {
    await commit(change);
    const stored = <T extends { version: number }>(pair: { before: T | null; after: T }) => ({
      before: pair.before,
      after: { ...pair.after, version: (pair.before?.version ?? -1) + 1 },
    });
    for (const pair of change.machines ?? []) records.push({ kind: 'machine', ...stored(pair) });
    for (const pair of change.instances ?? []) records.push({ kind: 'instance', ...stored(pair) });
  };
  return records;
}

/** Deliver the records out of order, every third one twice, in concurrent batches of 20; `seed` picks the order. */
export async function deliver(h: Harness, records: StreamRecord[], seed: number): Promise<void> {
  const delivered = [...records, ...records.filter((_, i) => i % 3 === 0)];
  let state = seed;
  for (let i = delivered.length - 1; i > 0; i--) {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    const j = state % (i + 1);
    [delivered[i], delivered[j]] = [delivered[j]!, delivered[i]!];
  }
  const concerned = (r: StreamRecord) =>
    r.kind === 'machine' ? registry.concernedBy('machine', r.before, r.after, r.after.id) : registry.concernedBy('instance', r.before, r.after, r.after.id);
  const batches: StreamRecord[][] = [];
  for (let i = 0; i < delivered.length; i += 20) batches.push(delivered.slice(i, i + 20));
  await Promise.all(batches.map((batch) => startRun(h.ctx).reconcile(batch.flatMap(concerned))));
}
