import { describe, expect, it } from 'vitest';
import type { Machine } from '#domain/core/model.ts';
import {
  capacityChange,
  capacityShardOf,
  INDEX_SETTLE_MS,
  repairedShard,
  reservationHealth,
  type CapacityNode,
  type OrgCapacityShard,
} from '#domain/capacity/org-capacity.ts';
import { addMs, iso } from '#domain/core/time.ts';
import { aMachine, anInstance, AT, NOW } from '#test/support/fixtures.ts';

const heartbeat = { rosterSeenAt: AT, timeoutMs: 60_000 };

/** The nodes and counter shards after the stream counted `machines` at `at`, from nothing counted. */
function counted(machines: Machine[], at: string): { nodes: CapacityNode[]; shards: OrgCapacityShard[] } {
  const { change } = capacityChange({
    machineIds: machines.map((m) => m.id),
    machines: new Map(machines.map((m) => [m.id, m])),
    instances: new Map(),
    nodes: new Map(),
    shards: new Map(),
    feedHeads: new Map(),
    now: at,
  });
  const { nodes, shards } = change!.orgCapacity!;
  return { nodes: nodes.map(({ after }) => ({ ...after, version: 1 })), shards: shards.map(({ after }) => ({ ...after, version: 1 })) };
}

const reserved = (id: string) => aMachine({ id, reservation: { id: 'rsv-1', org: 'acme' } });
/** Two machines of one counter shard. */
const [first, second] = ['m-1', 'm-5'] as const;

describe("the sweep's recount of an org shard", () => {
  it('leaves counters that moved within INDEX_SETTLE_MS, though the listing misses a node they count', () => {
    expect(capacityShardOf(second)).toBe(capacityShardOf(first));
    const { nodes, shards } = counted([reserved(first), reserved(second)], AT);
    const [shard] = shards;
    expect(shard!.movedAt).toBe(AT);
    expect(reservationHealth(shards, 'rsv-1', heartbeat, new Date(AT)).machines).toBe(2);
    const lagging = nodes.slice(0, 1);
    expect(repairedShard('acme', shard!.shard, shard!, lagging, addMs(new Date(AT), INDEX_SETTLE_MS - 1))).toBeNull();
  });

  it('recounts them from the listed nodes once settled, timing the recount', () => {
    const { nodes, shards } = counted([reserved(first), reserved(second)], AT);
    const [shard] = shards;
    const damaged = { ...shard!, counters: { 'gb200|delivered': 99 } };
    const later = addMs(new Date(AT), INDEX_SETTLE_MS);
    expect(repairedShard('acme', shard!.shard, damaged, nodes, later)).toEqual({ ...shard, movedAt: iso(later), version: 1 });
    expect(repairedShard('acme', shard!.shard, shard!, nodes, later)).toBeNull();
    // Stored before shards kept the time they moved: trusted as settled.
    const { movedAt: _, ...untimed } = damaged;
    expect(repairedShard('acme', shard!.shard, untimed, nodes, later)?.counters).toEqual(shard!.counters);
  });

  it('every node change moves the time of each org shard it counts in, the one it leaves too', () => {
    const before = counted([reserved(first)], AT);
    const holder = anInstance({ id: 'i-1', org: 'globex', machineId: first, status: 'Ready' });
    const moved = aMachine({ id: first, instanceId: holder.id });
    const { change } = capacityChange({
      machineIds: [first],
      machines: new Map([[first, moved]]),
      instances: new Map([[holder.id, holder]]),
      nodes: new Map(before.nodes.map((n) => [n.machineId, n])),
      shards: new Map(before.shards.map((s) => [JSON.stringify([s.org, s.shard]), s])),
      feedHeads: new Map(),
      now: iso(NOW),
    });
    expect(change!.orgCapacity!.shards.map(({ after }) => [after.org, after.movedAt])).toEqual([
      ['acme', iso(NOW)],
      ['globex', iso(NOW)],
    ]);
  });
});
