import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Change } from '#domain/core/change.ts';
import {
  applyDelta,
  COUNTER_ITEMS_PER_SHARD,
  counterItemOf,
  counterItemsOfShard,
  fleetSummary,
  shardOf,
  SUMMARY_SHARDS,
  summaryChange,
  type RackAggregate,
  type SummaryShard,
} from '#domain/machines/fleet-summary.ts';
import type { Machine } from '#domain/core/model.ts';
import { rackTallies } from '#domain/machines/rack-tally.ts';
import { addMs, iso } from '#domain/core/time.ts';
import { aMachine, aRepairRequest, AT, summaryOfFresh, summaryOfOne, T0 } from '#test/support/fixtures.ts';

const heartbeat = { rosterSeenAt: AT, timeoutMs: 30_000 };

/** Apply a summary change to the aggregates as the store would (no guards here: those are the store's). */
function applied(change: Change | null, rack: RackAggregate | null, shard: SummaryShard | null) {
  if (!change) return { rack, shard };
  return { rack: change.fleetSummary!.racks[0]!.after, shard: change.fleetSummary!.shards[0]!.after };
}

function keep(machines: Machine[]) {
  let rack: RackAggregate | null = null;
  let shard: SummaryShard | null = null;
  for (const machine of machines) ({ rack, shard } = applied(summaryChange(summaryOfOne(machine, rack, shard)), rack, shard));
  return { rack, shard };
}

describe('summaryChange', () => {
  it('applies a newer version by the exact difference; the same or an older version changes nothing', () => {
    const v1 = aMachine({ version: 1 });
    const v2 = aMachine({ version: 2, state: 'Assigned', instanceId: 'i-1' });
    const { rack, shard } = keep([v1, v2]);
    expect(shard!.counters).toMatchObject({ machines: 1, 'state|Assigned': 1 });
    expect(shard!.counters).not.toHaveProperty('allocatable');
    expect(shard!.counters).not.toHaveProperty('state|Ready');
    expect(summaryChange(summaryOfOne(v2, rack, shard))).toBeNull();
    expect(summaryChange(summaryOfOne(v1, rack, shard))).toBeNull();
  });

  it('counts overrides per type, and quarantine per rack from the rack item alone', () => {
    const { rack, shard } = keep([aMachine({ id: 'a', version: 1, healthOverrides: [aRepairRequest('a')] }), aMachine({ id: 'b', version: 1 })]);
    const summary = fleetSummary([shard!], heartbeat, T0);
    expect(summary).toMatchObject({ machines: 2, allocatable: 1, stale: 0, byOverride: { 'repair-request': 1 } });
    expect(summary.byType.gb200).toEqual({ machines: 2, allocatable: 1 });
    expect(Object.keys(shard!.counters).filter((counter) => counter.includes('r1'))).toEqual([]);
    expect(rackTallies(rack!, heartbeat, T0)).toEqual({ tally: { machines: 2, allocatable: 1, quarantined: 1 } });
  });

  it('counts per NVLink domain, staleness applied at read time, and moves a machine between domains exactly', () => {
    const stale = iso(addMs(T0, -120_000));
    const machines = [
      aMachine({ id: 'a', version: 1, nvlinkDomain: 'd1', healthOverrides: [aRepairRequest('a')] }),
      aMachine({ id: 'b', version: 1, nvlinkDomain: 'd1' }),
      aMachine({ id: 'c', version: 1, nvlinkDomain: 'd2', heartbeatLive: false, lastHeartbeatAt: stale }),
      aMachine({ id: 'd', version: 1 }),
    ];
    const { rack, shard } = keep(machines);
    const withDomains = { nvlinkDomains: true };
    const summary = fleetSummary([shard!], heartbeat, T0, withDomains);
    const counted = {
      d1: { machines: 2, allocatable: 1, quarantined: 1 },
      d2: { machines: 1, allocatable: 0, quarantined: 0 },
    };
    expect(summary.byType.gb200!.byNvlinkDomain).toEqual(counted);
    expect(rackTallies(rack!, heartbeat, T0).byNvlinkDomain).toEqual(counted);
    const moved = applied(summaryChange(summaryOfOne(aMachine({ id: 'b', version: 2, nvlinkDomain: 'd2' }), rack, shard)), rack, shard);
    expect(fleetSummary([moved.shard!], heartbeat, T0, withDomains).byType.gb200!.byNvlinkDomain).toEqual({
      d1: { machines: 1, allocatable: 0, quarantined: 1 },
      d2: { machines: 2, allocatable: 1, quarantined: 0 },
    });
    expect(fleetSummary([keep([aMachine({ version: 1 })]).shard!], heartbeat, T0, withDomains).byType.gb200!.byNvlinkDomain).toBeUndefined();
  });

  it('keeps the domain counters apart, and counts per domain only when asked for', () => {
    const { shard } = keep([aMachine({ id: 'a', version: 1, nvlinkDomain: 'd1' })]);
    expect(Object.keys(shard!.counters).filter((counter) => counter.includes('d1'))).toEqual([]);
    expect(shard!.domainCounters).toMatchObject({ 'domain|d1|machines': 1 });
    expect(fleetSummary([shard!], heartbeat, T0).byType.gb200).toEqual({ machines: 1, allocatable: 1 });
    const { domainCounters: _left, ...asReadByDefault } = shard!;
    expect(fleetSummary([asReadByDefault], heartbeat, T0)).toEqual(fleetSummary([shard!], heartbeat, T0));
  });

  it('reads counter items written before: rack counters passed over, domain counters among the others still counted', () => {
    // Two machines of d1 counted among the type's counters; since then one left d1, moved in the domain counters.
    const { shard } = keep([aMachine({ id: 'a', version: 1, nvlinkDomain: 'd1' }), aMachine({ id: 'b', version: 1, nvlinkDomain: 'd1' })]);
    const legacy: SummaryShard = {
      ...shard!,
      counters: { ...shard!.counters, 'domain|d1|machines': 2, 'rack|r1|machines': 2, 'rack|r1|allocatable': 2 },
      domainCounters: { 'domain|d1|machines': -1 },
    };
    const summary = fleetSummary([legacy], heartbeat, T0, { nvlinkDomains: true });
    expect(summary.byType.gb200).toMatchObject({ machines: 2, allocatable: 2 });
    expect(summary.byType.gb200!.byNvlinkDomain!.d1!.machines).toBe(1);
  });

  it("names the machine's reservation in its entry while one holds it; the counters stay, a late record changes nothing", () => {
    const free = aMachine({ version: 1 });
    const reserved = aMachine({ version: 2, reservation: { id: 'res-1', org: 'acme' } });
    const held = keep([free, reserved]);
    expect(held.rack!.machines['m-1']!.reservation).toEqual({ id: 'res-1', org: 'acme' });
    expect(held.shard!.counters).toEqual(keep([free]).shard!.counters);
    expect(summaryChange(summaryOfOne(free, held.rack, held.shard))).toBeNull();
    expect(summaryChange(summaryOfOne(reserved, held.rack, held.shard))).toBeNull();
    const released = applied(summaryChange(summaryOfOne(aMachine({ version: 3 }), held.rack, held.shard)), held.rack, held.shard);
    expect(released.rack!.machines['m-1']).not.toHaveProperty('reservation');
    expect(released.shard!.counters).toEqual(held.shard!.counters);
  });

  it('a machine that left the rack is taken out of it, and only then', () => {
    const { rack, shard } = keep([aMachine({ version: 1 })]);
    const counted = { machineId: 'm-1', machineType: 'gb200', rack: 'r1' };
    expect(summaryChange(summaryOfOne(aMachine({ version: 1 }), rack, shard, counted))).toBeNull();
    const moved = applied(summaryChange(summaryOfOne(aMachine({ version: 2, rack: 'r2' }), rack, shard, counted)), rack, shard);
    expect(moved.rack!.machines).toEqual({});
    expect(moved.shard!.counters).toEqual({});
  });
});

describe('summaryChange of a batch', () => {
  it('writes each touched rack and shard once, with the counters of the changes applied one by one', () => {
    const machines = ['r1', 'r2', 'r1', 'r3'].map((rack, i) =>
      aMachine({ id: `m-${i}`, rack, version: 1, ...(i === 2 ? { healthOverrides: [aRepairRequest(`m-${i}`)] } : {}) }),
    );
    const oneByOne = new Map<number, Record<string, number>>();
    const racks = new Map<string, RackAggregate | null>();
    for (const machine of machines) {
      const change = summaryChange(summaryOfOne(machine, racks.get(machine.rack) ?? null, null))!;
      racks.set(machine.rack, change.fleetSummary!.racks[0]!.after);
      const shard = change.fleetSummary!.shards[0]!.after;
      oneByOne.set(shard.shard, applyDelta(oneByOne.get(shard.shard) ?? {}, shard.counters));
    }
    const batch = summaryChange(summaryOfFresh(machines))!;
    expect(batch.fleetSummary!.racks.map((r) => r.after.rack).sort()).toEqual(['r1', 'r2', 'r3']);
    expect(batch.fleetSummary!.racks.find((r) => r.after.rack === 'r1')!.after.machines).toHaveProperty('m-2');
    expect(new Set(batch.fleetSummary!.shards.map((s) => s.after.shard)).size).toBe(batch.fleetSummary!.shards.length);
    expect(new Map(batch.fleetSummary!.shards.map((s) => [s.after.shard, s.after.counters]))).toEqual(oneByOne);
  });
});

describe('fleetSummary staleness', () => {
  it('is decided at read time: a roster older than the timeout makes its machines stale and not allocatable', () => {
    const { shard } = keep([aMachine({ version: 1 })]);
    expect(fleetSummary([shard!], heartbeat, addMs(T0, 30_000))).toMatchObject({ stale: 0, allocatable: 1 });
    expect(fleetSummary([shard!], heartbeat, addMs(T0, 30_001))).toMatchObject({ stale: 1, allocatable: 0 });
  });

  it('a machine out of the roster is stale once its own last heartbeat is older than the timeout', () => {
    const off = aMachine({ version: 1, heartbeatLive: false, lastHeartbeatAt: iso(addMs(T0, -20_000)) });
    const { shard } = keep([off]);
    const fresh = { rosterSeenAt: iso(addMs(T0, 5_000)), timeoutMs: 30_000 };
    expect(fleetSummary([shard!], fresh, addMs(T0, 10_000))).toMatchObject({ stale: 0, allocatable: 1 });
    expect(fleetSummary([shard!], fresh, addMs(T0, 10_001))).toMatchObject({ stale: 1, allocatable: 0 });
    const { rack } = keep([off]);
    expect(rackTallies(rack!, fresh, addMs(T0, 10_000)).tally).toEqual({ machines: 1, allocatable: 1, quarantined: 0 });
    expect(rackTallies(rack!, fresh, addMs(T0, 10_001)).tally).toEqual({ machines: 1, allocatable: 0, quarantined: 0 });
  });
});

describe('counter items', () => {
  it("a rack's counter item is one of its shard's, so recounting a shard covers every item its racks are counted in", () => {
    fc.assert(
      fc.property(fc.string(), (rack) => {
        expect(counterItemsOfShard(shardOf(rack))).toContain(counterItemOf(rack));
      }),
    );
  });

  it('spread the racks of a shard over its items, so one change rewrites the counters of few racks', () => {
    const racks = Array.from({ length: 1_250 }, (_, i) => `gb200-r${i + 1}`);
    const perItem = new Map<number, number>();
    for (const rack of racks) perItem.set(counterItemOf(rack), (perItem.get(counterItemOf(rack)) ?? 0) + 1);
    expect(perItem.size).toBe(SUMMARY_SHARDS * COUNTER_ITEMS_PER_SHARD);
    // Racks of 8 at 10,000 machines: no item holds more than twice its even share.
    expect(Math.max(...perItem.values())).toBeLessThanOrEqual((2 * racks.length) / perItem.size);
  });
});
