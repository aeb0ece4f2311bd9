import { describe, expect, it } from 'vitest';
import { releaseInstance } from '#services/instances.ts';
import { addHealthOverride } from '#services/machine-actions.ts';
import { createMetaInstance, deleteMetaInstance, listMetaInstances, showMetaInstance } from '#services/meta-instances.ts';
import { sweep } from '#reconcilers/sweep.ts';
import { harness, rejection, siteWith, tenant, type Harness, reconcile } from '#test/support/service-harness.ts';
import { ops } from '#test/support/fixtures.ts';
import { recordedMembers } from '#test/support/meta-members.ts';

const alice = tenant('acme', 'alice');
const pair = { machineType: 'gb200', minNodes: 2, placement: { sameRack: false }, labels: { job: 'llm' } };

async function metaInstanceOn(fleet: Record<string, number>, request = pair) {
  const h = harness();
  await siteWith(h, fleet);
  const created = await createMetaInstance(h.ctx, alice, request);
  return { h, created, ref: { entity: 'meta-instance' as const, id: created.id } };
}

const live = async (h: Harness, id: string) => (await showMetaInstance(h.ctx, alice, id)).instanceIds;
/** Every instance of the org bound to the meta-instance, whether or not its record lists it: what was ever placed for it. */
const bound = async (h: Harness, id: string) => (await h.store.listInstances(alice.org, { limit: 100 })).items.filter((i) => i.metaInstanceId === id);

describe('createMetaInstance', () => {
  it('commits the meta-instance with its first placement: Ready with one instance per node', async () => {
    const { h, created } = await metaInstanceOn({ gb200: 3 });
    expect(created).toMatchObject({ id: 'mi-1', org: 'acme', status: 'Ready', minNodes: 2, labels: { job: 'llm' } });
    expect(created.instanceIds).toHaveLength(2);
    const members = await recordedMembers(h.store, 'mi-1');
    expect(members.map((i) => i.id).sort()).toEqual([...created.instanceIds].sort());
    expect(members.every((i) => i.status === 'Provisioning' && i.labels.job === 'llm' && i.createdBy === 'meta-instance:mi-1')).toBe(true);
  });

  it('says how many of its members are Ready: Ready is placed, usable whole once readyMembers reaches minNodes', async () => {
    const { h, created } = await metaInstanceOn({ gb200: 3 });
    expect(created).toMatchObject({ status: 'Ready', readyMembers: 0 });
    const [first, second] = created.instanceIds;
    await reconcile(h.ctx, { entity: 'instance', id: first! });
    expect(await showMetaInstance(h.ctx, alice, created.id)).toMatchObject({ status: 'Ready', readyMembers: 1 });
    await reconcile(h.ctx, { entity: 'instance', id: second! });
    expect(await showMetaInstance(h.ctx, alice, created.id)).toMatchObject({ status: 'Ready', readyMembers: 2 });
    expect((await listMetaInstances(h.ctx, 'acme', { limit: 10 })).items[0]).toMatchObject({ readyMembers: 2 });
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
    const [failing] = await recordedMembers(h.store, created.id);
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
    const replacement = (await recordedMembers(h.store, created.id)).find((i) => !created.instanceIds.includes(i.id))!;
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
    const [failing] = await recordedMembers(h.store, created.id);
    await addHealthOverride(h.ctx, failing!.machineId, { template: 'degraded' }, ops);
    await sweep(h.ctx);
    expect((await h.store.getMetaInstance(created.id))!.lastFailureError).toBe(`machine ${failing!.machineId}: health-override:degraded`);
    expect(await live(h, created.id)).not.toContain(failing!.id);
    expect(await live(h, created.id)).toHaveLength(2);
  });

  it('a reconcile that loses its commit to a rival decides again on fresh state, and replaces the member once', async () => {
    const { h, created, ref } = await metaInstanceOn({ gb200: 3 });
    const [failing] = await recordedMembers(h.store, created.id);
    await addHealthOverride(h.ctx, failing!.machineId, { template: 'degraded' }, ops);
    h.store.loseCommit('metaInstances');
    await reconcile(h.ctx, ref);
    expect(h.store.attempts.get('metaInstances')).toBeGreaterThan(2);
    expect((await h.store.getMetaInstance(created.id))!).toMatchObject({ status: 'Ready', lastFailureError: expect.stringContaining(failing!.machineId) });
    expect(await live(h, created.id)).toHaveLength(2);
    // Two originals and one replacement: the lost pass placed nothing.
    expect(await bound(h, created.id)).toHaveLength(3);
  });
});

describe('deleteMetaInstance, showMetaInstance and listMetaInstances', () => {
  it('delete releases every member with the meta-instance; once they are gone the reconciler marks it Deleted', async () => {
    const { h, created, ref } = await metaInstanceOn({ gb200: 2 });
    const view = await deleteMetaInstance(h.ctx, alice, created.id);
    expect(view).toMatchObject({ status: 'Deleting', instanceIds: [] });
    const members = await recordedMembers(h.store, created.id);
    expect(members).toHaveLength(2);
    for (const member of members) expect(member.status).toBe('Terminating');
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
    const [member] = await recordedMembers(h.store, created.id);
    await releaseInstance(h.ctx, alice, member!.id);
    await reconcile(h.ctx, ref);
    await reconcile(h.ctx, ref);
    expect((await h.store.getMetaInstance(created.id))!).toMatchObject({ status: 'Ready', consecutiveFailures: 0 });
    const now = await live(h, created.id);
    expect(now).toHaveLength(2);
    expect(now).not.toContain(member!.id);
  });
});

describe('with the indexes lagging the table, as in AWS (the store never shows a write to an index read until 1 s has passed)', () => {
  const LAG = 1_000;

  /** A site whose indexes have caught up with its setup; from then on the clock stands still, so every index read lags. */
  async function laggingSite(fleet: Record<string, number>, maxReplacementsInFlight = 5) {
    const h = harness({ indexLagMs: LAG });
    h.ctx.config = { ...h.ctx.config, meta_instance: { ...h.ctx.config.meta_instance, max_replacements_in_flight: maxReplacementsInFlight } };
    await siteWith(h, fleet);
    h.clock.advance(LAG + 1);
    return h;
  }
  const liveBound = async (h: Harness, id: string) => (await bound(h, id)).filter((i) => ['Provisioning', 'Ready', 'Repairing'].includes(i.status));

  it('a member replaced pass after pass is replaced once: live members never exceed minNodes, whatever the indexes say', async () => {
    const h = await laggingSite({ gb200: 8 });
    const created = await createMetaInstance(h.ctx, alice, { ...pair, minNodes: 3 });
    const ref = { entity: 'meta-instance' as const, id: created.id };
    expect(created.instanceIds).toHaveLength(3);
    // The org's index does not show them yet; the meta-instance's own record does.
    expect(await bound(h, created.id)).toEqual([]);
    expect((await h.store.getMetaInstance(created.id))!.memberIds).toEqual(created.instanceIds);

    const failing = (await h.store.getInstance(created.instanceIds[0]!))!;
    await addHealthOverride(h.ctx, failing.machineId, { template: 'degraded' }, ops);
    for (let pass = 0; pass < 4; pass++) {
      await reconcile(h.ctx, ref);
      await sweep(h.ctx);
      expect(await live(h, created.id)).toHaveLength(3);
    }
    expect(await live(h, created.id)).not.toContain(failing.id);
    // Only the replacement was created: no pass placed a second one (the first members' creates were not run here).
    expect(h.agent.creates).toHaveLength(1);

    h.clock.advance(LAG + 1);
    expect(await liveBound(h, created.id)).toHaveLength(3);
  });

  it('the replacement cap holds site-wide while the replacing index does not yet show a replacement in flight', async () => {
    const h = await laggingSite({ gb200: 8 }, 1);
    const first = await createMetaInstance(h.ctx, alice, pair);
    const second = await createMetaInstance(h.ctx, alice, pair);
    for (const meta of [first, second]) {
      await addHealthOverride(h.ctx, (await h.store.getInstance(meta.instanceIds[0]!))!.machineId, { template: 'degraded' }, ops);
    }
    // While the first meta-instance's replacement is being created (still Provisioning), the second one decides.
    let inFlightThen = -1;
    h.agent.willCreate(async (request) => {
      inFlightThen = await h.store.replacementsInFlight();
      await reconcile(h.ctx, { entity: 'meta-instance', id: second.id });
      return { ok: true, siteName: request.name, attempts: 1 };
    });
    await reconcile(h.ctx, { entity: 'meta-instance', id: first.id });

    expect(inFlightThen).toBe(0);
    expect(await live(h, first.id)).toHaveLength(2);
    expect(await live(h, second.id)).toHaveLength(1);
    expect((await h.store.getMetaInstance(second.id))!.placementError).toBe('waiting for a replacement slot: 1 of 1 replacements in flight site-wide');
    // One create so far: the first meta-instance's replacement; the second placed nothing.
    expect(h.agent.creates).toHaveLength(1);

    // Once the first replacement is Ready, the slot is free: the second is replaced, still before any index caught up.
    await reconcile(h.ctx, { entity: 'meta-instance', id: second.id });
    expect(await live(h, second.id)).toHaveLength(2);
    expect((await h.store.getRecords({ replacements: true })).replacements?.instanceIds).toHaveLength(1);
  });
});
