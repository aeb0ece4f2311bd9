import { describe, expect, it, vi } from 'vitest';
import type { Change } from '#domain/core/change.ts';
import { createInstance, LAST_TRY_RESERVE_MS, patchInstance, releaseInstance } from '#services/instances.ts';
import { addHealthOverride } from '#services/machine-actions.ts';
import { setTenant } from '#services/tenants.ts';
import type { FleetStore } from '#store/port.ts';
import { harness, rejection, siteWith, tenant } from '#test/support/service-harness.ts';
import { ops } from '#test/support/fixtures.ts';

const alice = tenant('acme', 'alice');
const repairer = tenant('fixit', 'bob');

/** Someone else takes the machine between our read and our claim: it is no longer free. */
const rivalClaims = async (rival: FleetStore, change: Change | null) => {
  const machine = (await rival.getMachine(change!.machines![0]!.after.id))!;
  await rival.commit({ machines: [{ before: machine, after: { ...machine, state: 'Assigned', instanceId: 'i-rival' } }], history: [] });
};

describe('createInstance by machine type', () => {
  it('claims a free live machine: the instance Provisioning, the machine Assigned to it, in one commit', async () => {
    const h = harness();
    await siteWith(h, { gb200: 1 });
    const instance = await createInstance(h.ctx, alice, { machineType: 'gb200', name: 'train', labels: { team: 'a' } });

    expect(instance).toMatchObject({
      id: 'i-1',
      org: 'acme',
      name: 'train',
      machineId: 'gb200-1',
      status: 'Provisioning',
      labels: { team: 'a' },
      createdBy: 'alice',
    });
    expect(await h.store.getInstance('i-1')).toEqual({ ...instance, version: 0 });
    expect(await h.store.getMachine('gb200-1')).toMatchObject({ state: 'Assigned', instanceId: 'i-1' });
    expect(await h.store.allocatableMachineIds('gb200')).toEqual([]);
    // The create call is the reconciler's job: the request never talks to the agent.
    expect(h.agent.creates).toEqual([]);
  });

  it('refuses an unknown type (422) and a type with nothing free (409), changing nothing', async () => {
    const h = harness();
    await siteWith(h, { gb200: 1 });
    expect(await rejection(createInstance(h.ctx, alice, { machineType: 'a100' }))).toMatchObject({ status: 422, code: 'unknown-machine-type' });
    await createInstance(h.ctx, alice, { machineType: 'gb200' });
    const before = await h.store.getMachine('gb200-1');
    expect(await rejection(createInstance(h.ctx, alice, { machineType: 'gb200' }))).toMatchObject({ status: 409, code: 'no-capacity' });
    expect(await h.store.getMachine('gb200-1')).toEqual(before);
    expect((await h.store.listInstances('acme', { limit: 10 })).items).toHaveLength(1);
  });

  it('does not place on a machine whose heartbeat went stale', async () => {
    const h = harness();
    await siteWith(h, { gb200: 1 });
    h.clock.advance(h.ctx.config.heartbeat.timeout_seconds * 1000 + 1);
    expect(await rejection(createInstance(h.ctx, alice, { machineType: 'gb200' }))).toMatchObject({ status: 409, code: 'no-capacity' });
  });

  it('a claim lost to a rival write that left the machine free is decided again, and wins', async () => {
    const h = harness();
    await siteWith(h, { gb200: 1 });
    h.store.loseCommit('machines', { nth: 1 });
    const instance = await createInstance(h.ctx, alice, { machineType: 'gb200' });
    expect(await h.store.getMachine('gb200-1')).toMatchObject({ state: 'Assigned', instanceId: instance.id });
    expect(h.store.attempts.get('instances')).toBe(2);
  });

  it('a claim lost to a rival who took the machine moves on to another machine', async () => {
    const h = harness();
    await siteWith(h, { gb200: 2 });
    h.store.loseCommit('instances', { rival: rivalClaims });
    const instance = await createInstance(h.ctx, alice, { machineType: 'gb200' });
    const machines = await Promise.all(['gb200-1', 'gb200-2'].map((id) => h.store.getMachine(id)));
    expect(machines.map((m) => m!.instanceId).sort()).toEqual([instance.id, 'i-rival'].sort());
  });

  it('a create that lost a race with too little time left before its deadline answers 409 concurrent-update, even with tries left', async () => {
    const h = harness();
    await siteWith(h, { gb200: 4 });
    h.store.loseCommit('instances', { times: Infinity, rival: rivalClaims });
    const ctx = { ...h.ctx, deadline: Date.now() + LAST_TRY_RESERVE_MS - 1 };
    expect(await rejection(createInstance(ctx, alice, { machineType: 'gb200' }))).toMatchObject({ status: 409, code: 'concurrent-update' });
    expect(h.store.attempts.get('instances')).toBe(1);
    expect((await h.store.listInstances('acme', { limit: 10 })).items).toEqual([]);
  });

  it('when rivals take every machine first, answers 409 no-capacity and leaves no instance behind', async () => {
    const h = harness();
    await siteWith(h, { gb200: 2 });
    h.store.loseCommit('instances', { times: Infinity, rival: rivalClaims });
    expect(await rejection(createInstance(h.ctx, alice, { machineType: 'gb200' }))).toMatchObject({ status: 409, code: 'no-capacity' });
    expect((await h.store.listInstances('acme', { limit: 10 })).items).toEqual([]);
  });
});

describe('createInstance with the allocatable index lagging, as in AWS', () => {
  it('finds a free machine in another rack when the rack it picked holds only machines the index still shows free', async () => {
    const lagMs = 1_000;
    const h = harness({ indexLagMs: lagMs });
    await siteWith(h, { gb200: 4 });
    h.clock.advance(lagMs + 1);
    // Rack r2's machines leave allocation; the index shows them free for a while yet.
    for (const id of ['gb200-2', 'gb200-4']) await addHealthOverride(h.ctx, id, { template: 'degraded' }, ops);
    // The create picks rack r2 (the last of the draw) and, of what it reads, the last machine.
    const random = vi.spyOn(Math, 'random').mockReturnValue(0.99);
    try {
      const instance = await createInstance(h.ctx, alice, { machineType: 'gb200' });
      expect(['gb200-1', 'gb200-3']).toContain(instance.machineId);
    } finally {
      random.mockRestore();
    }
  });
});

describe('createInstance on a named machine (repair tenants)', () => {
  it('needs the capability (403) and a machine awaiting repair (409)', async () => {
    const h = harness();
    await siteWith(h, { gb200: 1 });
    expect(await rejection(createInstance(h.ctx, repairer, { machineId: 'gb200-1' }))).toMatchObject({ status: 403, code: 'capability-required' });
    await setTenant(h.ctx, 'fixit', { capabilities: { targetedInstanceCreation: true } }, ops);
    expect(await rejection(createInstance(h.ctx, repairer, { machineId: 'gb200-1' }))).toMatchObject({
      status: 409,
      code: 'machine-unavailable',
      message: 'machine gb200-1 cannot be claimed for repair: no-repair-request',
    });
    expect(await rejection(createInstance(h.ctx, repairer, { machineId: 'nope' }))).toMatchObject({ status: 404, message: 'machine nope was not found' });
  });

  it('claims a machine that carries a repair request', async () => {
    const h = harness();
    await siteWith(h, { gb200: 1 });
    await setTenant(h.ctx, 'fixit', { capabilities: { targetedInstanceCreation: true } }, ops);
    await addHealthOverride(h.ctx, 'gb200-1', { template: 'request-repair', message: 'fans' }, ops);
    const instance = await createInstance(h.ctx, repairer, { machineId: 'gb200-1' });
    expect(instance).toMatchObject({ org: 'fixit', machineId: 'gb200-1', status: 'Provisioning' });
    expect(await h.store.getMachine('gb200-1')).toMatchObject({ state: 'Assigned', instanceId: instance.id });
  });
});

describe('releaseInstance', () => {
  async function placed() {
    const h = harness();
    await siteWith(h, { gb200: 2 });
    const instance = await createInstance(h.ctx, alice, { machineType: 'gb200' });
    return { h, instance };
  }

  it('terminates the instance and sends its machine to cleanup; a second release changes nothing', async () => {
    const { h, instance } = await placed();
    h.clock.advance(1_000);
    const first = await releaseInstance(h.ctx, alice, instance.id);
    expect(first).toMatchObject({ changed: true, instance: { status: 'Terminating' } });
    const machine = (await h.store.getMachine(instance.machineId))!;
    expect(machine).toMatchObject({ state: 'Cleanup', cleanup: { instanceId: instance.id, phase: 'pending' } });

    const again = await releaseInstance(h.ctx, alice, instance.id);
    expect(again.changed).toBe(false);
    expect(await h.store.getMachine(instance.machineId)).toEqual(machine);
  });

  it("another org's instance does not exist for the caller", async () => {
    const { h, instance } = await placed();
    expect(await rejection(releaseInstance(h.ctx, tenant('globex'), instance.id))).toMatchObject({ status: 404 });
    expect((await h.store.getInstance(instance.id))!.status).toBe('Provisioning');
  });

  const issue = { category: 'HARDWARE' as const, summary: 'ECC errors' };

  it('an issue report quarantines the machine, requests a repair and counts the quarantine for the breaker', async () => {
    const h = harness();
    await siteWith(h, { gb200: 20 });
    const instance = await createInstance(h.ctx, alice, { machineType: 'gb200' });
    await releaseInstance(h.ctx, alice, instance.id, { issue });
    const machine = (await h.store.getMachine(instance.machineId))!;
    expect(machine.healthOverrides.map((o) => o.source).sort()).toEqual(['repair-request', 'tenant-reported-issue']);
    expect(machine.repairLog?.reports).toEqual([{ at: expect.any(String), issue }]);
    expect(await h.store.getSafety()).toMatchObject({ quarantines: [expect.any(String)], repairStorm: { state: 'closed', heldBack: [] }, version: 0 });
  });

  it('in a small fleet one quarantine is past the fraction: the breaker trips and holds the repair request back', async () => {
    const { h, instance } = await placed();
    await releaseInstance(h.ctx, alice, instance.id, { issue });
    const machine = (await h.store.getMachine(instance.machineId))!;
    expect(machine.healthOverrides.map((o) => o.source)).toEqual(['tenant-reported-issue']);
    expect((await h.store.getSafety())!.repairStorm).toMatchObject({ state: 'tripped', heldBack: [machine.id] });
  });

  it('a lost race is decided again on fresh state', async () => {
    const { h, instance } = await placed();
    h.store.loseCommit('instances');
    expect((await releaseInstance(h.ctx, alice, instance.id)).changed).toBe(true);
    expect((await h.store.getInstance(instance.id))!.status).toBe('Terminating');
    expect(h.store.attempts.get('instances')).toBe(2);
  });

  it('a record that keeps changing ends in 409 concurrent-update, and nothing of the release is written', async () => {
    const { h, instance } = await placed();
    const machineBefore = await h.store.getMachine(instance.machineId);
    h.store.loseCommit('instances', { times: Infinity });
    expect(await rejection(releaseInstance(h.ctx, alice, instance.id))).toMatchObject({ status: 409, code: 'concurrent-update' });
    expect((await h.store.getInstance(instance.id))!.status).toBe('Provisioning');
    expect(await h.store.getMachine(instance.machineId)).toEqual(machineBefore);
  });
});

describe('patchInstance', () => {
  it('changes labels of an own instance and records it', async () => {
    const h = harness();
    await siteWith(h, { gb200: 1 });
    const instance = await createInstance(h.ctx, alice, { machineType: 'gb200', labels: { a: '1' } });
    const patched = await patchInstance(h.ctx, alice, instance.id, { labels: { b: '2' } });
    expect(patched.labels).toEqual({ a: '1', b: '2' });
    expect((await h.store.getInstance(instance.id))!.labels).toEqual({ a: '1', b: '2' });
    expect(await rejection(patchInstance(h.ctx, tenant('globex'), instance.id, { labels: { c: '3' } }))).toMatchObject({ status: 404 });
  });
});
