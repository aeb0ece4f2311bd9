import { describe, expect, it } from 'vitest';
import { createInstance } from '#services/instances.ts';
import { addHealthOverride, patchMachineLabels, removeHealthOverride, tenantPatchMachineLabels, tenantShowMachine } from '#services/machine-actions.ts';
import { listMachines, machineHistory, REGISTRATION_RESERVE_MS, registerMachines, showMachine } from '#services/machines.ts';
import { ThrottledError } from '#store/port.ts';
import { setTenant } from '#services/tenants.ts';
import { bucketOf, RECHECK } from '#domain/machines/heartbeat.ts';
import { receiveHeartbeat } from '#services/heartbeats.ts';
import { harness, reconcile, rejection, siteWith, tenant } from '#test/support/service-harness.ts';
import { ops } from '#test/support/fixtures.ts';

const alice = tenant('acme', 'alice');

describe('registerMachines', () => {
  it('registers a large batch, new machines in batches and re-described ones in transactions under the limit, the catalog updated once', async () => {
    const h = harness();
    const registrations = Array.from({ length: 1_020 }, (_, i) => ({
      id: `m-${String(i).padStart(4, '0')}`,
      machineType: i < 600 ? 'gb200' : 'h100',
      rack: 'r1',
    }));
    expect(await registerMachines(h.ctx, registrations.slice(0, 120), ops)).toEqual({ upserted: 120 });
    expect(h.store.attempts.get('machines')).toBeUndefined();
    const redescribed = registrations.map((r, i) => (i < 120 ? { ...r, rack: 'r2' } : r));
    expect(await registerMachines(h.ctx, redescribed, ops)).toEqual({ upserted: 1_020 });
    expect(h.store.attempts.get('machines')).toBe(3);
    expect(await h.store.getMachine('m-0119')).toMatchObject({ rack: 'r2', version: 1 });
    expect(await h.store.getCatalog()).toMatchObject({ types: { gb200: { count: 600, racks: { r1: 480, r2: 120 } }, h100: { count: 420 } }, version: 1 });
    const listed = await h.store.listMachines({ limit: 2_000 });
    expect(listed.items).toHaveLength(1_020);
    expect((await machineHistory(h.ctx, 'm-0999', { limit: 5 })).items.map((e) => e.action)).toEqual(['machine-registered']);
    expect((await machineHistory(h.ctx, 'm-0119', { limit: 5 })).items.map((e) => e.action)).toEqual(['machine-updated', 'machine-registered']);
  });

  it('near its deadline leaves the chunks not begun, with the catalog true to what it did; registering again finishes', async () => {
    const h = harness();
    const registrations = Array.from({ length: 1_000 }, (_, i) => ({ id: `m-${String(i).padStart(4, '0')}`, machineType: 'gb200', rack: 'r1' }));
    await registerMachines(h.ctx, registrations, ops);
    const commit = h.store.commit.bind(h.store);
    // A slow store: each transaction takes 300 ms, so the request's time runs out after a round or two of chunks.
    const slow = Object.assign(Object.create(h.store), {
      commit: (change: Parameters<typeof commit>[0]) => new Promise((resolve) => setTimeout(resolve, 300)).then(() => commit(change)),
    });
    const moved = registrations.map((r) => ({ ...r, rack: 'r2' }));
    const late = { ...h.ctx, store: slow, deadline: Date.now() + REGISTRATION_RESERVE_MS + 400 };
    expect(await registerMachines(late, moved, ops).catch((e: unknown) => e)).toBeInstanceOf(ThrottledError);

    const racks = async () => {
      const { items } = await h.store.listMachines({ limit: 2_000 });
      return { r1: items.filter((m) => m.rack === 'r1').length, r2: items.filter((m) => m.rack === 'r2').length };
    };
    const partway = await racks();
    expect(partway.r1).toBeGreaterThan(0);
    expect((await h.store.getCatalog()).types.gb200).toMatchObject({ count: 1_000, racks: partway.r2 > 0 ? partway : { r1: 1_000 } });

    expect(await registerMachines(h.ctx, moved, ops)).toEqual({ upserted: partway.r1 });
    expect(await racks()).toEqual({ r1: 0, r2: 1_000 });
    expect((await h.store.getCatalog()).types.gb200).toMatchObject({ count: 1_000, racks: { r2: 1_000 } });
  });

  it('new machines have their stored roster buckets walked again; machines already known do not', async () => {
    const h = harness();
    await registerMachines(h.ctx, [{ id: 'm-1', machineType: 'gb200' }], ops);
    await receiveHeartbeat(h.ctx, ['m-1', 'm-2']);
    const settle = async (buckets: string[]) => Promise.all(buckets.map((id) => reconcile(h.ctx, { entity: 'roster-bucket', id })));
    await settle([bucketOf('m-1'), bucketOf('m-2')]);
    const before = await h.store.getRosterBuckets([bucketOf('m-2')]);
    await registerMachines(h.ctx, [{ id: 'm-1', machineType: 'gb200', labels: { a: 'b' } }], ops);
    expect(await h.store.getRosterBuckets([bucketOf('m-2')])).toEqual(before);
    await registerMachines(h.ctx, [{ id: 'm-2', machineType: 'gb200' }], ops);
    expect((await h.store.getRosterBuckets([bucketOf('m-2')])).get(bucketOf('m-2'))).toMatchObject({ appliedDigest: RECHECK });
  });

  it('registering again unchanged writes nothing; a changed type moves the catalog count', async () => {
    const h = harness();
    await registerMachines(h.ctx, [{ id: 'm-1', machineType: 'gb200', rack: 'r1' }], ops);
    expect(await registerMachines(h.ctx, [{ id: 'm-1', machineType: 'gb200', rack: 'r1' }], ops)).toEqual({ upserted: 0 });
    expect(await registerMachines(h.ctx, [{ id: 'm-1', machineType: 'h100', rack: 'r1' }], ops)).toEqual({ upserted: 1 });
    const catalog = await h.store.getCatalog();
    expect(catalog.types.h100).toMatchObject({ count: 1 });
    expect(catalog.types.gb200?.count ?? 0).toBe(0);
  });

  it('a registration cut off before its catalog update: registering the same machines again lists them', async () => {
    const h = harness();
    const machines = ['m-1', 'm-2'].map((id) => ({ id, machineType: 'gb200', rack: 'r1' }));
    await registerMachines(h.ctx, machines, ops);
    const catalog = await h.store.getCatalog();
    // As if the request had ended before its catalog update: the machines stored, the catalog without their rack.
    await h.store.commit({ catalog: { before: catalog, after: { ...catalog, types: {} } }, history: [] });
    expect((await h.store.listMachines({ limit: 10 })).items).toEqual([]);
    expect(await registerMachines(h.ctx, machines, ops)).toEqual({ upserted: 0 });
    expect((await h.store.getCatalog()).types.gb200).toMatchObject({ count: 2, racks: { r1: 2 } });
    expect((await h.store.listMachines({ limit: 10 })).items.map((m) => m.id)).toEqual(['m-1', 'm-2']);
    // Once counted, registering them again changes nothing.
    const counted = await h.store.getCatalog();
    await registerMachines(h.ctx, machines, ops);
    expect(await h.store.getCatalog()).toEqual(counted);
  });

  it('a chunk that loses a race is loaded and decided again', async () => {
    const h = harness();
    await registerMachines(h.ctx, [{ id: 'm-1', machineType: 'gb200', rack: 'r1' }], ops);
    h.store.loseCommit('machines');
    expect(await registerMachines(h.ctx, [{ id: 'm-1', machineType: 'gb200', rack: 'r2' }], ops)).toEqual({ upserted: 1 });
    expect(await h.store.getMachine('m-1')).toMatchObject({ rack: 'r2', version: 2 });
  });
});

describe('listMachines and showMachine', () => {
  it('show the machine as the API does, allocatability included; filters apply per page', async () => {
    const h = harness();
    await siteWith(h, { gb200: 2, h100: 1 });
    await createInstance(h.ctx, alice, { machineType: 'h100' });
    const all = await listMachines(h.ctx, { limit: 10 }, {});
    // Rack by rack, each by id: gb200-1 and h100-1 are on r1, gb200-2 on r2.
    expect(all.items.map((m) => m.id)).toEqual(['gb200-1', 'h100-1', 'gb200-2']);
    expect((await listMachines(h.ctx, { limit: 10 }, { allocatable: false })).items).toEqual([
      expect.objectContaining({ id: 'h100-1', state: 'Assigned', allocatable: false, notAllocatableReasons: ['state:Assigned', 'assigned'] }),
    ]);
    expect((await listMachines(h.ctx, { limit: 10 }, { machineType: 'gb200', allocatable: true })).items.map((m) => m.id)).toEqual(['gb200-1', 'gb200-2']);
    const firstPage = await listMachines(h.ctx, { limit: 2 }, {});
    expect((await listMachines(h.ctx, { limit: 2, nextToken: firstPage.nextToken }, {})).items.map((m) => m.id)).toEqual(['gb200-2']);
    expect(await showMachine(h.ctx, 'gb200-1')).toMatchObject({ id: 'gb200-1', allocatable: true, lastHeartbeatAt: expect.any(String) });
    expect(await rejection(showMachine(h.ctx, 'nope'))).toMatchObject({ status: 404 });
  });

  it('the repair-request filter reads the repair index: only machines with a request', async () => {
    const h = harness();
    await siteWith(h, { gb200: 3 });
    await addHealthOverride(h.ctx, 'gb200-2', { template: 'request-repair' }, ops);
    expect((await listMachines(h.ctx, { limit: 10 }, { healthOverride: 'repair-request' })).items.map((m) => m.id)).toEqual(['gb200-2']);
  });
});

describe('health overrides and labels', () => {
  it('an override takes the machine out of allocation until removed; removing a missing one is 404', async () => {
    const h = harness();
    await siteWith(h, { gb200: 1 });
    const override = await addHealthOverride(h.ctx, 'gb200-1', { template: 'degraded', message: 'slow NVLink' }, ops);
    expect(override).toMatchObject({ source: 'degraded', createdBy: 'ops' });
    expect(await h.store.allocatableMachineIds('gb200')).toEqual([]);
    await removeHealthOverride(h.ctx, 'gb200-1', 'degraded', ops);
    expect(await h.store.allocatableMachineIds('gb200')).toEqual(['gb200-1']);
    expect(await rejection(removeHealthOverride(h.ctx, 'gb200-1', 'degraded', ops))).toMatchObject({ status: 404 });
    expect((await h.store.listHistory('gb200-1', { limit: 2 })).items.map((e) => e.action)).toEqual(['health-override-removed', 'health-override-added']);
  });

  it('an override added while the machine changes under it lands on the fresh record', async () => {
    const h = harness();
    await siteWith(h, { gb200: 1 });
    h.store.loseCommit('machines', {
      rival: async (rival) => {
        const machine = (await rival.getMachine('gb200-1'))!;
        await rival.commit({ machines: [{ before: machine, after: { ...machine, labels: { rival: 'yes' } } }], history: [] });
      },
    });
    await addHealthOverride(h.ctx, 'gb200-1', { template: 'degraded' }, ops);
    expect(await h.store.getMachine('gb200-1')).toMatchObject({ labels: { rival: 'yes' }, healthOverrides: [expect.objectContaining({ source: 'degraded' })] });
  });

  it('providers patch labels; null removes one', async () => {
    const h = harness();
    await siteWith(h, { gb200: 1 });
    await patchMachineLabels(h.ctx, 'gb200-1', { a: '1', b: '2' }, ops);
    expect((await patchMachineLabels(h.ctx, 'gb200-1', { a: null }, ops)).labels).toEqual({ b: '2' });
  });
});

describe('tenant views of machines', () => {
  it("a tenant sees the machine it holds; others' machines do not exist for it unless it may repair them", async () => {
    const h = harness();
    await siteWith(h, { gb200: 2 });
    const instance = await createInstance(h.ctx, alice, { machineType: 'gb200' });
    const other = instance.machineId === 'gb200-1' ? 'gb200-2' : 'gb200-1';
    expect(await tenantShowMachine(h.ctx, alice, instance.machineId)).toMatchObject({ id: instance.machineId, instanceId: instance.id });
    expect(await rejection(tenantShowMachine(h.ctx, alice, other))).toMatchObject({ status: 404 });

    const repairer = tenant('fixit', 'bob');
    await setTenant(h.ctx, 'fixit', { capabilities: { targetedInstanceCreation: true } }, ops);
    const seen = await tenantShowMachine(h.ctx, repairer, instance.machineId);
    // Another tenant's instance is not shown to the repair tenant.
    expect(seen).not.toHaveProperty('instanceId');
    expect(await rejection(tenantPatchMachineLabels(h.ctx, repairer, instance.machineId, { repair_status: 'x' }))).toMatchObject({
      status: 403,
      code: 'not-machine-holder',
    });
    expect((await tenantPatchMachineLabels(h.ctx, alice, instance.machineId, { note: 'mine' })).labels).toEqual({ note: 'mine' });
  });
});
