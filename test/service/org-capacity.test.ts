import { describe, expect, it, vi } from 'vitest';
import type { Instance } from '#domain/core/model.ts';
import { capacityShardOf, ORG_CAPACITY_SHARDS, reservationHealth } from '#domain/capacity/org-capacity.ts';
import { loadHeartbeatView } from '#runtime/heartbeat-view.ts';
import { repairOrgCapacityShard } from '#reconcilers/org-capacity-repair.ts';
import { startRun } from '#reconcilers/runner.ts';
import { createInstance, releaseInstance } from '#services/instances.ts';
import { addHealthOverride } from '#services/machine-actions.ts';
import { listOrgNodes, readOrgCapacity } from '#services/org-capacity.ts';
import { setTenant } from '#services/tenants.ts';
import { beat, harness, siteWith, tenant, type Harness } from '#test/support/service-harness.ts';
import { ops } from '#test/support/fixtures.ts';
import { deliver, recordStream } from '#test/support/recorded-stream.ts';

const alice = tenant('acme', 'alice');
const bob = tenant('globex', 'bob');

async function setInstanceStatus(h: Harness, id: string, status: Instance['status']) {
  const before = (await h.store.getInstance(id))!;
  await h.store.commit({ instances: [{ before, after: { ...before, status } }], history: [] });
}

async function reserve(h: Harness, machineId: string, reservation: { id: string; org: string }) {
  const before = (await h.store.getMachine(machineId))!;
  await h.store.commit({ machines: [{ before, after: { ...before, reservation } }], history: [] });
}

const count = (machines: number, gpus: number) => ({ machines, gpus: machines * gpus });

describe('org capacity', () => {
  it("shows the org's quota per type, in machines and GPUs, a type with a quota even before anything is delivered", async () => {
    const h = harness();
    await siteWith(h, { gb200: 2, h100: 2 });
    await setTenant(h.ctx, 'acme', { quotas: { gb200: 3, h100: 2 } }, ops);
    expect((await readOrgCapacity(h.ctx, 'acme')).byType).toEqual({
      gb200: { gpusPerMachine: 4, delivered: count(0, 4), healthy: count(0, 4), reserved: count(0, 4), inUse: count(0, 4), quota: count(3, 4) },
      h100: { gpusPerMachine: 8, delivered: count(0, 8), healthy: count(0, 8), reserved: count(0, 8), inUse: count(0, 8), quota: count(2, 8) },
    });
    expect((await readOrgCapacity(h.ctx, 'globex')).byType).toEqual({});
  });

  it('counts delivered, healthy, reserved and in-use machines per org, whatever order and however often the stream delivers', async () => {
    const h = harness();
    const records = recordStream(h);
    await siteWith(h, { gb200: 6, h100: 4 });
    const acme = [
      await createInstance(h.ctx, alice, { machineType: 'gb200', labels: { project: 'llm' } }),
      await createInstance(h.ctx, alice, { machineType: 'gb200' }),
      await createInstance(h.ctx, alice, { machineType: 'gb200' }),
    ];
    const globex = [await createInstance(h.ctx, bob, { machineType: 'h100' }), await createInstance(h.ctx, bob, { machineType: 'h100' })];
    await setInstanceStatus(h, acme[0]!.id, 'Ready');
    await setInstanceStatus(h, acme[1]!.id, 'Repairing');
    await addHealthOverride(h.ctx, acme[2]!.machineId, { template: 'out-for-repair' }, ops);
    const free = ['gb200-1', 'gb200-2', 'gb200-3', 'gb200-4', 'gb200-5', 'gb200-6'].find((id) => !acme.some((i) => i.machineId === id))!;
    await reserve(h, free, { id: 'rsv-1', org: 'acme' });
    await releaseInstance(h.ctx, bob, globex[1]!.id);

    await deliver(h, records, 7);
    const statuses = async (instances: Instance[]) => Promise.all(instances.map(async (i) => (await h.store.getInstance(i.id))?.status));
    // The stream's reactions provisioned the rest (the scripted agent); the released one waits for its cleanup.
    expect(await statuses(acme)).toEqual(['Ready', 'Repairing', 'Ready']);
    expect(await statuses(globex)).toEqual(['Ready', 'Terminating']);

    const acmeNow = await readOrgCapacity(h.ctx, 'acme');
    expect(acmeNow).toEqual({
      asOf: h.clock.now().toISOString(),
      byType: { gb200: { gpusPerMachine: 4, delivered: count(4, 4), healthy: count(3, 4), reserved: count(1, 4), inUse: count(3, 4) } },
    });
    expect((await readOrgCapacity(h.ctx, 'globex')).byType).toEqual({
      h100: { gpusPerMachine: 8, delivered: count(2, 8), healthy: count(2, 8), reserved: count(0, 8), inUse: count(1, 8) },
    });

    const nodes = (await listOrgNodes(h.ctx, 'acme', { limit: 10 })).items;
    expect(nodes.map((n) => n.nodeId).sort()).toEqual([...acme.map((i) => i.machineId), free].sort());
    expect(nodes.find((n) => n.nodeId === acme[0]!.machineId)).toMatchObject({
      instanceId: acme[0]!.id,
      project: 'llm',
      inUse: true,
      health: 'healthy',
      region: 'dc1',
    });
    expect(nodes.find((n) => n.nodeId === acme[2]!.machineId)).toMatchObject({ health: 'unhealthy', healthDetail: ['out-for-repair'], inUse: true });
    expect(nodes.find((n) => n.nodeId === free)).toMatchObject({ reservationId: 'rsv-1', inUse: false, gpuCount: 4 });
    expect(nodes.find((n) => n.nodeId === free)?.instanceId).toBeUndefined();

    // Delivering everything again, late, changes nothing.
    const stored = async () => [...(await h.store.orgCapacityShards('acme')), ...(await h.store.orgCapacityShards('globex'))];
    const before = await stored();
    await deliver(h, records, 11);
    expect(await stored()).toEqual(before);

    // A terminated instance gives its machine back: it leaves the org's counts and nodes.
    await setInstanceStatus(h, globex[1]!.id, 'Terminated');
    await deliver(h, records.splice(0), 13);
    expect((await readOrgCapacity(h.ctx, 'globex')).byType.h100?.delivered).toEqual(count(1, 8));
    expect((await listOrgNodes(h.ctx, 'globex', { limit: 10 })).items.map((n) => n.nodeId)).toEqual([globex[0]!.machineId]);
  });

  it('counts no machine healthy once its heartbeat is stale, with no write at all', async () => {
    const h = harness();
    const records = recordStream(h);
    await siteWith(h, { gb200: 2 });
    await createInstance(h.ctx, alice, { machineType: 'gb200' });
    await deliver(h, records, 3);
    expect((await readOrgCapacity(h.ctx, 'acme')).byType.gb200?.healthy).toEqual(count(1, 4));
    h.clock.advance(10 * 60_000);
    expect((await readOrgCapacity(h.ctx, 'acme')).byType.gb200).toMatchObject({ delivered: count(1, 4), healthy: count(0, 4) });
    const [node] = (await listOrgNodes(h.ctx, 'acme', { limit: 10 })).items;
    expect(node).toMatchObject({ health: 'unhealthy', healthDetail: ['heartbeat-stale'] });
    await beat(h, ['gb200-1', 'gb200-2']);
    expect((await readOrgCapacity(h.ctx, 'acme')).byType.gb200?.healthy).toEqual(count(1, 4));
  });

  it('the sweep recounts a drifted org shard from its nodes, one org shard per run', async () => {
    const h = harness();
    const records = recordStream(h);
    await siteWith(h, { gb200: 8 });
    for (let i = 0; i < 5; i++) await createInstance(h.ctx, alice, { machineType: 'gb200' });
    await deliver(h, records, 5);
    const healthy = await h.store.orgCapacityShards('acme');
    const [damaged] = healthy;
    await h.store.commit({
      orgCapacity: { nodes: [], shards: [{ before: damaged!, after: { ...damaged!, counters: { 'gb200|delivered': 99 } } }] },
      history: [],
    });
    expect((await readOrgCapacity(h.ctx, 'acme')).byType.gb200?.delivered.machines).toBeGreaterThan(99);

    let repaired = 0;
    for (let run = 0; run < 2 * ORG_CAPACITY_SHARDS; run++) {
      repaired += Number((await repairOrgCapacityShard(h.ctx)).repaired);
      h.clock.advance(60_000);
    }
    expect(repaired).toBe(1);
    expect((await h.store.orgCapacityShards('acme')).map((s) => s.counters)).toEqual(healthy.map((s) => s.counters));
    expect((await readOrgCapacity(h.ctx, 'acme')).byType.gb200?.delivered).toEqual(count(5, 4));
  });

  it('the sweep leaves an org shard whose counters just moved: its index may not show the nodes they count yet', async () => {
    const lagMs = 1_000;
    const h = harness({ indexLagMs: lagMs });
    const records = recordStream(h);
    await siteWith(h, { gb200: 4 });
    await reserve(h, 'gb200-2', { id: 'rsv-1', org: 'acme' });
    await deliver(h, records.splice(0), 3);
    // The sweep takes org shards in turn by the minute: on to the minute of gb200-1's shard, long after the lag.
    const minute = Math.floor(h.clock.now().getTime() / 60_000);
    h.clock.advance((((capacityShardOf('gb200-1') - minute) % ORG_CAPACITY_SHARDS) + ORG_CAPACITY_SHARDS) * 60_000 + 2 * lagMs);
    await reserve(h, 'gb200-1', { id: 'rsv-1', org: 'acme' });
    await deliver(h, records.splice(0), 5);
    const counted = await h.store.orgCapacityShards('acme');
    expect(reservationHealth(counted, 'rsv-1', await loadHeartbeatView(h.ctx), h.clock.now()).machines).toBe(2);

    expect(await repairOrgCapacityShard(h.ctx)).toEqual({ repaired: false });
    expect(await h.store.orgCapacityShards('acme')).toEqual(counted);
  });

  it('a machine changed and reconciled while a reaction reads it: that reaction writes no node from the machine as it was', async () => {
    const h = harness();
    const records = recordStream(h);
    await siteWith(h, { gb200: 2 });
    await deliver(h, records.splice(0), 3);
    // A batch read is not isolated: between two of its items, a rival commit and its whole reaction can happen.
    const read = h.store.getCapacityItems.bind(h.store);
    let rival: (() => Promise<void>) | undefined = async () => {
      await reserve(h, 'gb200-1', { id: 'rsv-1', org: 'acme' });
      await deliver(h, records.splice(0), 5);
    };
    h.store.getCapacityItems = async (ids) => {
      const { machines } = await read({ machines: ids.machines ?? [] });
      const interleaved = rival;
      rival = undefined;
      await interleaved?.();
      return { ...(await read({ ...ids, machines: [] })), machines };
    };
    await startRun(h.ctx).reconcile([{ entity: 'org-capacity', id: 'gb200-1' }]);
    h.store.getCapacityItems = read;
    expect(rival).toBeUndefined();
    const health = reservationHealth(await h.store.orgCapacityShards('acme'), 'rsv-1', await loadHeartbeatView(h.ctx), h.clock.now());
    expect(health.machines).toBe(1);
    expect((await listOrgNodes(h.ctx, 'acme', { limit: 10 })).items.map((n) => n.nodeId)).toEqual(['gb200-1']);
  });

  it('reads the same, whatever the org holds: its counter items in one batch read, its quotas in one query, and the site heartbeat', async () => {
    const readsFor = async (delivered: number) => {
      const h = harness();
      const records = recordStream(h);
      await siteWith(h, { gb200: delivered });
      for (let i = 0; i < delivered; i++) await createInstance(h.ctx, alice, { machineType: 'gb200' });
      await deliver(h, records, 19);
      const primitives = (h.store as unknown as { items: Record<'getItem' | 'getItems' | 'queryItems', () => Promise<unknown>> }).items;
      const spies = (['getItem', 'getItems', 'queryItems'] as const).map((name) => [name, vi.spyOn(primitives, name)] as const);
      expect((await readOrgCapacity(h.ctx, 'acme')).byType.gb200?.delivered.machines).toBe(delivered);
      return Object.fromEntries(spies.map(([name, spy]) => [name, spy.mock.calls.length]));
    };
    const small = await readsFor(4);
    expect(small).toEqual({ getItem: 1, getItems: 1, queryItems: 1 });
    expect(await readsFor(120)).toEqual(small);
  });
});
