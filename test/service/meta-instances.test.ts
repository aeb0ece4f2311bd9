import { describe, expect, it } from 'vitest';
import { releaseInstance } from '#services/instances.ts';
import { addHealthOverride } from '#services/machine-actions.ts';
import { createMetaInstance, deleteMetaInstance, listMetaInstances, showMetaInstance } from '#services/meta-instances.ts';
import { sweep } from '#reconcilers/sweep.ts';
import { harness, rejection, siteWith, tenant, type Harness, reconcile } from '#test/support/service-harness.ts';
import { ops } from '#test/support/fixtures.ts';

const alice = tenant('acme', 'alice');
const pair = { machineType: 'gb200', minNodes: 2, placement: { sameRack: false }, labels: { job: 'llm' } };

async function metaInstanceOn(fleet: Record<string, number>, request = pair) {
  const h = harness();
  await siteWith(h, fleet);
  const created = await createMetaInstance(h.ctx, alice, request);
  return { h, created, ref: { entity: 'meta-instance' as const, id: created.id } };
}

const live = async (h: Harness, id: string) => (await showMetaInstance(h.ctx, alice, id)).instanceIds;

describe('createMetaInstance', () => {
  it('commits the meta-instance with its first placement: Ready with one instance per node', async () => {
    const { h, created } = await metaInstanceOn({ gb200: 3 });
    expect(created).toMatchObject({ id: 'mi-1', org: 'acme', status: 'Ready', minNodes: 2, labels: { job: 'llm' } });
    expect(created.instanceIds).toHaveLength(2);
    const members = await h.store.membersOf('mi-1');
    expect(members.map((i) => i.id).sort()).toEqual([...created.instanceIds].sort());
    expect(members.every((i) => i.status === 'Provisioning' && i.labels.job === 'llm' && i.createdBy === 'meta-instance:mi-1')).toBe(true);
  });

  it('waits (Placing) while too few machines are free; a machine freed up wakes it and it is placed', async () => {
    const { h, created } = await metaInstanceOn({ gb200: 2 });
    const waiting = await createMetaInstance(h.ctx, alice, pair);
    expect(waiting).toMatchObject({ status: 'Placing', instanceIds: [] });
    expect((await h.store.waitingMetaInstances('gb200', 10)).map((m) => m.id)).toEqual([waiting.id]);

    await deleteMetaInstance(h.ctx, alice, created.id);
    // The agent has nothing to sanitize: each machine returns to the pool as soon as its DELETE is answered.
    h.agent.willDelete({ kind: 'gone' }, { kind: 'gone' });
    // The reaction to the machines coming back wakes the waiting meta-instance in the same run, which takes them.
    await reconcile(h.ctx, { entity: 'machine', id: 'gb200-1' });
    expect(await showMetaInstance(h.ctx, alice, waiting.id)).toMatchObject({ status: 'Placing' });
    await reconcile(h.ctx, { entity: 'machine', id: 'gb200-2' });
    expect(await h.store.allocatableMachineIds('gb200')).toEqual([]);

    expect(await showMetaInstance(h.ctx, alice, waiting.id)).toMatchObject({ status: 'Ready', instanceIds: [expect.any(String), expect.any(String)] });
    expect(await h.store.waitingMetaInstances('gb200', 10)).toEqual([]);
  });

  it('refuses what the site can never satisfy (422 unsatisfiable), writing nothing', async () => {
    const h = harness();
    await siteWith(h, { gb200: 1 });
    expect(await rejection(createMetaInstance(h.ctx, alice, pair))).toMatchObject({ status: 422, code: 'unsatisfiable' });
    expect((await h.store.listMetaInstances(null, { limit: 10 })).items).toEqual([]);
  });
});

describe('a failed member', () => {
  it('is released, counted and replaced by the reconciler; running it again changes nothing more', async () => {
    const { h, created, ref } = await metaInstanceOn({ gb200: 3 });
    const [failing] = await h.store.membersOf(created.id);
    await addHealthOverride(h.ctx, failing!.machineId, { template: 'degraded' }, ops);

    await reconcile(h.ctx, ref);
    const meta = (await h.store.getMetaInstance(created.id))!;
    // The failure was counted, and the placement that followed in the same run reset the consecutive count.
    expect(meta).toMatchObject({ status: 'Ready', consecutiveFailures: 0, lastFailureError: `machine ${failing!.machineId}: health-override:degraded` });
    expect(await h.store.getInstance(failing!.id)).toMatchObject({ metaFailureCounted: true, failureReason: meta.lastFailureError });
    expect((await h.store.getInstance(failing!.id))!.status).toBe('Terminating');
    const now = await live(h, created.id);
    expect(now).toHaveLength(2);
    expect(now).not.toContain(failing!.id);
    const replacement = (await h.store.membersOf(created.id)).find((i) => !created.instanceIds.includes(i.id))!;
    expect(replacement.replacement).toBe(true);
    // The same run sent the replacement's create, so it no longer counts against the replacement cap.
    expect(replacement.status).toBe('Ready');
    expect(await h.store.replacementsInFlight()).toBe(0);

    await reconcile(h.ctx, ref);
    await sweep(h.ctx);
    expect(await h.store.getMetaInstance(created.id)).toEqual(meta);
    expect(await live(h, created.id)).toEqual(now);
  });

  it('found by the sweep alone, without any stream reaction', async () => {
    const { h, created } = await metaInstanceOn({ gb200: 3 });
    const [failing] = await h.store.membersOf(created.id);
    await addHealthOverride(h.ctx, failing!.machineId, { template: 'degraded' }, ops);
    await sweep(h.ctx);
    expect((await h.store.getMetaInstance(created.id))!.lastFailureError).toBe(`machine ${failing!.machineId}: health-override:degraded`);
    expect(await live(h, created.id)).not.toContain(failing!.id);
    expect(await live(h, created.id)).toHaveLength(2);
  });

  it('a reconcile that loses its commit to a rival decides again on fresh state, and replaces the member once', async () => {
    const { h, created, ref } = await metaInstanceOn({ gb200: 3 });
    const [failing] = await h.store.membersOf(created.id);
    await addHealthOverride(h.ctx, failing!.machineId, { template: 'degraded' }, ops);
    h.store.loseCommit('metaInstances');
    await reconcile(h.ctx, ref);
    expect(h.store.attempts.get('metaInstances')).toBeGreaterThan(2);
    expect((await h.store.getMetaInstance(created.id))!).toMatchObject({ status: 'Ready', lastFailureError: expect.stringContaining(failing!.machineId) });
    expect(await live(h, created.id)).toHaveLength(2);
    // Two originals and one replacement: the lost pass placed nothing.
    expect(await h.store.membersOf(created.id)).toHaveLength(3);
  });
});

describe('deleteMetaInstance, showMetaInstance and listMetaInstances', () => {
  it('delete releases every member with the meta-instance; once they are gone the reconciler marks it Deleted', async () => {
    const { h, created, ref } = await metaInstanceOn({ gb200: 2 });
    const view = await deleteMetaInstance(h.ctx, alice, created.id);
    expect(view).toMatchObject({ status: 'Deleting', instanceIds: [] });
    for (const member of await h.store.membersOf(created.id)) expect(member.status).toBe('Terminating');
    await reconcile(h.ctx, ref);
    expect((await h.store.getMetaInstance(created.id))!.status).toBe('Deleted');
    expect(await rejection(showMetaInstance(h.ctx, alice, created.id))).toMatchObject({ status: 404 });
    // Deleting again is not an error for a meta-instance still being deleted, but a deleted one is gone.
    expect(await rejection(deleteMetaInstance(h.ctx, alice, created.id))).toMatchObject({ status: 404 });
  });

  it("another org's meta-instance does not exist for the caller; providers list the whole site", async () => {
    const { h, created } = await metaInstanceOn({ gb200: 2 });
    expect(await rejection(showMetaInstance(h.ctx, tenant('globex'), created.id))).toMatchObject({ status: 404 });
    expect((await listMetaInstances(h.ctx, 'globex', { limit: 10 })).items).toEqual([]);
    expect((await listMetaInstances(h.ctx, null, { limit: 10 })).items).toEqual([await showMetaInstance(h.ctx, alice, created.id)]);
  });

  it('a member its tenant released is not a failure, but it is replaced', async () => {
    const { h, created, ref } = await metaInstanceOn({ gb200: 3 });
    const [member] = await h.store.membersOf(created.id);
    await releaseInstance(h.ctx, alice, member!.id);
    await reconcile(h.ctx, ref);
    await reconcile(h.ctx, ref);
    expect((await h.store.getMetaInstance(created.id))!).toMatchObject({ status: 'Ready', consecutiveFailures: 0 });
    const now = await live(h, created.id);
    expect(now).toHaveLength(2);
    expect(now).not.toContain(member!.id);
  });
});
