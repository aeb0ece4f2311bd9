import { describe, expect, it, vi } from 'vitest';
import type { Change, Versioned } from '#domain/core/change.ts';
import type { Machine } from '#domain/core/model.ts';
import { registry } from '#reconcilers/registry.ts';
import { startRun } from '#reconcilers/runner.ts';
import { listRacks, readFleetSummary } from '#services/fleet-summary.ts';
import { repairSummaryShard } from '#reconcilers/summary-repair.ts';
import { createInstance, releaseInstance } from '#services/instances.ts';
import { receiveHeartbeat } from '#services/heartbeats.ts';
import { addHealthOverride } from '#services/machine-actions.ts';
import { listMachines, registerMachines } from '#services/machines.ts';
import { beat, harness, siteWith, tenant, type Harness } from '#test/support/service-harness.ts';
import { ops } from '#test/support/fixtures.ts';
import { applyDelta, countersByItem, SUMMARY_SHARDS, type SummaryShard } from '#domain/machines/fleet-summary.ts';

const alice = tenant('acme', 'alice');

/** Every machine record the services commit, as the table stream would carry it (services do not reconcile). */
function recordStream(h: Harness): Array<Versioned<Machine>> {
  const records: Array<Versioned<Machine>> = [];
  const commit = h.store.commit.bind(h.store);
  h.store.commit = async (change: Change) => {
    await commit(change);
    records.push(...(change.machines ?? []).map((pair) => ({ before: pair.before, after: { ...pair.after, version: (pair.before?.version ?? -1) + 1 } })));
  };
  return records;
}

/** A small deterministic shuffle, so a failure can be replayed. */
function shuffled<T>(items: T[], seed: number): T[] {
  const out = [...items];
  let state = seed;
  for (let i = out.length - 1; i > 0; i--) {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** Deliver the stream out of order, every third record twice, in concurrent batches, as Lambda may. */
async function deliver(h: Harness, records: Array<Versioned<Machine>>, seed: number): Promise<void> {
  const delivered = shuffled([...records, ...records.filter((_, i) => i % 3 === 0)], seed);
  const batches: Array<Array<Versioned<Machine>>> = [];
  for (let i = 0; i < delivered.length; i += 25) batches.push(delivered.slice(i, i + 25));
  await Promise.all(batches.map((batch) => startRun(h.ctx).reconcile(batch.flatMap((r) => registry.concernedBy('machine', r.before, r.after, r.after.id)))));
}

type Tally = { machines: number; allocatable: number; quarantined: number };

/** What the machine listing says, in the summary's terms; and per rack (`<type>/<rack>`), as the racks listing tallies. */
async function countedFromListing(h: Harness) {
  const views = [];
  let nextToken: string | undefined;
  do {
    const page = await listMachines(h.ctx, { limit: 100, nextToken }, {});
    views.push(...page.items);
    nextToken = page.nextToken;
  } while (nextToken);
  const bump = (counts: Record<string, number>, name: string) => void (counts[name] = (counts[name] ?? 0) + 1);
  const byState: Record<string, number> = {};
  const byOverride: Record<string, number> = {};
  const byLifecycle: Record<string, number> = {};
  const byType: Record<string, { machines: number; allocatable: number }> = {};
  const racks: Record<string, Tally> = {};
  for (const view of views) {
    bump(byState, view.state);
    bump(byLifecycle, view.lifecycle);
    for (const source of new Set(view.healthOverrides.map((o) => o.source))) bump(byOverride, source);
    const type = (byType[view.machineType] ??= { machines: 0, allocatable: 0 });
    const rack = (racks[`${view.machineType}/${view.rack}`] ??= { machines: 0, allocatable: 0, quarantined: 0 });
    type.machines += 1;
    rack.machines += 1;
    if (view.allocatable) {
      type.allocatable += 1;
      rack.allocatable += 1;
    }
    if (view.notAllocatableReasons.some((r) => r.startsWith('health-override:'))) rack.quarantined += 1;
  }
  const counts = {
    machines: views.length,
    allocatable: views.filter((v) => v.allocatable).length,
    stale: views.filter((v) => v.notAllocatableReasons.includes('heartbeat-stale')).length,
    byState,
    byOverride,
    byLifecycle,
    byType,
  };
  return { counts, racks };
}

async function summaryWithoutTime(h: Harness) {
  const { asOf, ...counts } = await readFleetSummary(h.ctx);
  expect(asOf).toBe(h.clock.now().toISOString());
  return counts;
}

/** Every type's racks as the racks listing tallies them, by `<type>/<rack>`. */
async function rackTalliesListed(h: Harness): Promise<Record<string, Tally>> {
  const tallies: Record<string, Tally> = {};
  for (const type of Object.keys((await h.store.getCatalog()).types)) {
    let nextToken: string | undefined;
    do {
      const page = await listRacks(h.ctx, type, { limit: 7, nextToken });
      for (const rack of page.items) if (rack.tally.machines > 0) tallies[`${type}/${rack.rack}`] = rack.tally;
      nextToken = page.nextToken;
    } while (nextToken);
  }
  return tallies;
}

describe('fleet summary', () => {
  it('matches the machine listing after a burst of changes delivered out of order and duplicated', async () => {
    const h = harness();
    const records = recordStream(h);
    await siteWith(h, { gb200: 24, h100: 9 });
    for (let i = 1; i <= 5; i++) await createInstance(h.ctx, alice, { machineType: 'gb200' });
    await addHealthOverride(h.ctx, 'h100-2', { template: 'request-repair' }, ops);
    await addHealthOverride(h.ctx, 'gb200-20', { template: 'out-for-repair' }, ops);
    // Re-described to another rack and another type: their entries must leave the old racks.
    await registerMachines(
      h.ctx,
      [
        { id: 'gb200-24', machineType: 'gb200', rack: 'r|9' },
        { id: 'h100-9', machineType: 'gb300', rack: 'r1' },
      ],
      ops,
    );
    // Three machines drop out of the roster.
    const roster = [...Array.from({ length: 21 }, (_, i) => `gb200-${i + 1}`), 'gb200-24', ...Array.from({ length: 8 }, (_, i) => `h100-${i + 1}`)];
    h.clock.advance(1000);
    await beat(h, roster);

    await deliver(h, records, 7);

    const expected = await countedFromListing(h);
    expect(expected.counts).toMatchObject({ machines: 33, stale: 0, byState: { Assigned: 5, Ready: 28 } });
    expect(await summaryWithoutTime(h)).toEqual(expected.counts);
    expect(await rackTalliesListed(h)).toEqual(expected.racks);
    expect(expected.racks).toMatchObject({ 'gb200/r|9': { machines: 1 }, 'gb300/r1': { machines: 1 } });

    // Time alone makes the dropped machines stale and not allocatable, with no write at all.
    h.clock.advance(10 * 60_000);
    await beat(h, roster);
    const later = await countedFromListing(h);
    expect(later.counts.stale).toBe(3);
    expect(await summaryWithoutTime(h)).toEqual(later.counts);
    expect(await rackTalliesListed(h)).toEqual(later.racks);

    // Delivering everything again, late, changes nothing.
    const before = await h.store.summaryShards();
    await deliver(h, records, 11);
    expect(await h.store.summaryShards()).toEqual(before);
  });

  it('keeps one heartbeat class for the machines of one roster, however many walks make them live, and when', async () => {
    const h = harness();
    const records = recordStream(h);
    const fleet = Array.from({ length: 300 }, (_, i) => ({ id: `gb200-${i + 1}`, machineType: 'gb200', rack: `r${(i % 30) + 1}` }));
    await registerMachines(h.ctx, fleet, ops);
    const { changedBuckets } = await receiveHeartbeat(
      h.ctx,
      fleet.map((m) => m.id),
      new Map(),
    );
    expect(changedBuckets.length).toBeGreaterThan(10);
    // Each bucket walked on its own, a moment after the one before.
    for (const id of changedBuckets) {
      h.clock.advance(7);
      await startRun(h.ctx).reconcile([{ entity: 'roster-bucket', id }]);
    }
    await deliver(h, records, 19);
    const classes = new Set((await h.store.summaryShards()).flatMap((s) => Object.keys(s.counters).filter((c) => c.startsWith('seen|'))));
    expect(classes).toEqual(new Set([expect.stringMatching(/^seen\|live\|.+\|machines$/), expect.stringMatching(/^seen\|live\|.+\|allocatable$/)]));
    expect(await summaryWithoutTime(h)).toMatchObject({ machines: 300, allocatable: 300, stale: 0 });
  });

  it('counts every machine when the site agent has gone silent', async () => {
    const h = harness();
    const records = recordStream(h);
    await siteWith(h, { gb200: 4 });
    await deliver(h, records, 3);
    h.clock.advance(60 * 60_000);
    expect(await summaryWithoutTime(h)).toMatchObject({ machines: 4, allocatable: 0, stale: 4 });
    expect(await summaryWithoutTime(h)).toEqual((await countedFromListing(h)).counts);
  });

  it('a machine released back to the pool is counted once in its new state', async () => {
    const h = harness();
    const records = recordStream(h);
    await siteWith(h, { gb200: 2 });
    const instance = await createInstance(h.ctx, alice, { machineType: 'gb200' });
    await releaseInstance(h.ctx, alice, instance.id);
    await deliver(h, records, 5);
    expect(await summaryWithoutTime(h)).toEqual((await countedFromListing(h)).counts);
  });

  it('a page of racks reads the catalog and one batch of racks by key, however many racks the type has', async () => {
    const readsFor = async (racks: number) => {
      const h = harness();
      const records = recordStream(h);
      const machines = Array.from({ length: racks }, (_, i) => ({ id: `gb200-${i}`, machineType: 'gb200', rack: `r${String(i).padStart(3, '0')}` }));
      await registerMachines(h.ctx, machines, ops);
      await beat(
        h,
        machines.map((m) => m.id),
      );
      await deliver(h, records, 7);
      const primitives = (h.store as unknown as { items: Record<'getItem' | 'getItems' | 'queryItems', () => Promise<unknown>> }).items;
      const spies = (['getItem', 'getItems', 'queryItems'] as const).map((name) => [name, vi.spyOn(primitives, name)] as const);
      const page = await listRacks(h.ctx, 'gb200', { limit: 500 });
      const reads = Object.fromEntries(spies.map(([name, spy]) => [name, spy.mock.calls.length]));
      return { reads, racks: page.items.map((rack) => rack.rack), more: page.nextToken !== undefined };
    };
    const small = await readsFor(4);
    expect(small).toMatchObject({ reads: { getItems: 1, queryItems: 0 }, racks: ['r000', 'r001', 'r002', 'r003'], more: false });
    const large = await readsFor(150);
    expect(large.reads).toEqual(small.reads);
    expect(large.racks).toHaveLength(100);
    expect(large.more).toBe(true);
  });

  it('the sweep recounts a drifted shard from its racks, one shard per run', async () => {
    const h = harness();
    const records = recordStream(h);
    await siteWith(h, { gb200: 6, h100: 2 });
    await deliver(h, records, 13);
    const counters = async () => (await h.store.summaryShards()).map((shard) => shard.counters);
    const healthy = await counters();
    const [damaged] = await h.store.summaryShards();
    await h.store.commit({
      fleetSummary: {
        racks: [],
        shards: [{ before: damaged!, after: { ...damaged!, counters: { machines: 99, 'state|Ready': 99, 'rack|r%7Cx|machines': 99 } } }],
      },
      history: [],
    });
    expect((await summaryWithoutTime(h)).machines).toBeGreaterThan(99);

    let repaired = 0;
    for (let run = 0; run < 2 * SUMMARY_SHARDS; run++) {
      repaired += Number((await repairSummaryShard(h.ctx)).repaired);
      h.clock.advance(60_000);
    }
    expect(repaired).toBe(1);
    expect(await counters()).toEqual(healthy);
  });

  it("counters kept one item per shard (before counter items) still add up, and the sweep's recount spreads them over the shard's items", async () => {
    const h = harness();
    const records = recordStream(h);
    const fleet = Array.from({ length: 96 }, (_, i) => ({ id: `gb200-${i + 1}`, machineType: 'gb200', rack: `r${(i % 24) + 1}` }));
    await registerMachines(h.ctx, fleet, ops);
    await beat(
      h,
      fleet.map((m) => m.id),
    );
    await deliver(h, records.splice(0), 17);
    const layout = async () =>
      Object.fromEntries((await h.store.summaryShards()).filter((s) => Object.keys(s.counters).length > 0).map((s) => [s.shard, s.counters]));
    const spread = await layout();
    expect(Object.keys(spread).length).toBeGreaterThan(SUMMARY_SHARDS);

    // The layout before counter items: all of a shard's counters in the item numbered as the shard.
    const stored = await h.store.summaryShards();
    const merged = stored.map((item): { before: SummaryShard; after: SummaryShard } => {
      const counters =
        item.shard < SUMMARY_SHARDS
          ? stored.filter((other) => other.shard % SUMMARY_SHARDS === item.shard).reduce((sum, other) => applyDelta(sum, other.counters), {})
          : {};
      return { before: item, after: { ...item, counters } };
    });
    await h.store.commit({ fleetSummary: { racks: [], shards: merged }, history: [] });
    expect(Object.keys(await layout()).every((item) => Number(item) < SUMMARY_SHARDS)).toBe(true);
    expect(await summaryWithoutTime(h)).toEqual((await countedFromListing(h)).counts);

    // Changes land in the new items (an old item keeps the old count: the sums stay right)...
    await createInstance(h.ctx, alice, { machineType: 'gb200' });
    await deliver(h, records.splice(0), 18);
    expect(await summaryWithoutTime(h)).toEqual((await countedFromListing(h)).counts);
    // ...and one recount per shard puts every counter where the stream would have.
    for (let run = 0; run < SUMMARY_SHARDS; run++) {
      await repairSummaryShard(h.ctx);
      h.clock.advance(60_000);
    }
    const racks = (await h.store.listRackAggregates('gb200', { limit: 100 })).items;
    expect(await layout()).toEqual(Object.fromEntries([...countersByItem(racks)].map(([item, counted]) => [item, counted.counters])));
    expect(await summaryWithoutTime(h)).toEqual((await countedFromListing(h)).counts);
  });
});
