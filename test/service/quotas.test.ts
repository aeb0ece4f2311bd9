import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createInstance, releaseInstance } from '#services/instances.ts';
import { createMetaInstance } from '#services/meta-instances.ts';
import { setTenant, showTenant } from '#services/tenants.ts';
import { harness, rejection, siteWith, tenant, type Harness } from '#test/support/service-harness.ts';
import { ops } from '#test/support/fixtures.ts';

// Quotas on the in-memory store, which applies the usage writes by the same rule as DynamoDB's conditions.

const alice = tenant('acme', 'alice');

/** The store's answers delivered in an order fast-check's scheduler picks, as a loaded DynamoDB answers out of order. */
function answersInAnyOrder(h: Harness, s: fc.Scheduler): void {
  const store = h.ctx.store;
  h.ctx.store = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => s.schedule(Promise.resolve(value.apply(target, args)), String(prop));
    },
  });
}

describe('quotas', () => {
  // A quota smaller than the usage shards (3 of 8: most shards get no share) and one larger.
  it.each([3, 5])('concurrent creates never take the org past a quota of %i: exactly the quota wins, every other is quota-exceeded', async (quota) => {
    const h = harness();
    await siteWith(h, { gb200: 12 });
    await setTenant(h.ctx, 'acme', { quotas: { gb200: quota } }, ops);
    const outcomes = await Promise.allSettled(Array.from({ length: 12 }, () => createInstance(h.ctx, alice, { machineType: 'gb200' })));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(quota);
    for (const refused of outcomes.filter((o) => o.status === 'rejected')) {
      expect((refused as PromiseRejectedResult).reason).toMatchObject({
        status: 409,
        code: 'quota-exceeded',
        quota: { machineType: 'gb200', quota, used: quota },
      });
    }
    expect(await showTenant(h.ctx, 'acme')).toMatchObject({ quotas: { gb200: quota }, usage: { gb200: quota } });
  });

  it('a burst answers by what is committed: the quota wins exactly, then quota-exceeded; short of it, no-capacity', async () => {
    const burst = fc.record({ machines: fc.integer({ min: 2, max: 6 }), quota: fc.integer({ min: 1, max: 4 }), creates: fc.integer({ min: 2, max: 10 }) });
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), burst, async (s, { machines, quota, creates }) => {
        const h = harness();
        await siteWith(h, { gb200: machines });
        await setTenant(h.ctx, 'acme', { quotas: { gb200: quota } }, ops);
        answersInAnyOrder(h, s);
        const settled = Promise.allSettled(Array.from({ length: creates }, () => createInstance(h.ctx, alice, { machineType: 'gb200' })));
        await s.waitFor(settled);
        const answers = (await settled).map((o) => (o.status === 'fulfilled' ? 'created' : (o.reason as { code: string }).code));
        const won = Math.min(quota, machines, creates);
        expect(answers.filter((a) => a === 'created')).toHaveLength(won);
        // A claim in flight is not a machine taken: it may lose to the quota and leave its machine free.
        expect(answers.filter((a) => a !== 'created')).toEqual(Array(creates - won).fill(won === quota ? 'quota-exceeded' : 'no-capacity'));
      }),
      { numRuns: 200 },
    );
  });

  it("the tenant's usage shows an instance at once, however far the indexes lag (it is what creates are guarded by)", async () => {
    const lagMs = 1_000;
    const h = harness({ indexLagMs: lagMs });
    await siteWith(h, { gb200: 2 });
    h.clock.advance(lagMs + 1);
    await createInstance(h.ctx, alice, { machineType: 'gb200' });
    expect((await showTenant(h.ctx, 'acme')).usage).toEqual({ gb200: 1 });
  });

  it('counts an instance until it is Terminated, and a terminated one frees its place', async () => {
    const h = harness();
    await siteWith(h, { gb200: 2 });
    await setTenant(h.ctx, 'acme', { quotas: { gb200: 1 } }, ops);
    const first = await createInstance(h.ctx, alice, { machineType: 'gb200' });
    expect(await rejection(createInstance(h.ctx, alice, { machineType: 'gb200' }))).toMatchObject({ status: 409, code: 'quota-exceeded' });
    await releaseInstance(h.ctx, alice, first.id, {});
    expect((await h.store.getInstance(first.id))!.status).toBe('Terminating');
    expect((await h.store.getQuotaUsage('acme', 'gb200'))!.used).toBe(1);
    const machine = (await h.store.getMachine(first.machineId))!;
    const instance = (await h.store.getInstance(first.id))!;
    await h.store.commit({
      instances: [{ before: instance, after: { ...instance, status: 'Terminated' } }],
      machines: [{ before: machine, after: { ...machine, state: 'Ready', instanceId: undefined, cleanup: undefined } }],
      history: [],
    });
    expect((await h.store.getQuotaUsage('acme', 'gb200'))!.used).toBe(0);
    expect((await createInstance(h.ctx, alice, { machineType: 'gb200' })).status).toBe('Provisioning');
  });

  it('a meta-instance whose minNodes alone exceeds the quota is 422; one without room is 409 and records nothing', async () => {
    const h = harness();
    await siteWith(h, { gb200: 6 });
    await setTenant(h.ctx, 'acme', { quotas: { gb200: 3 } }, ops);
    const request = { machineType: 'gb200', minNodes: 4, placement: { sameRack: false }, labels: {} };
    expect(await rejection(createMetaInstance(h.ctx, alice, request))).toMatchObject({ status: 422, code: 'unsatisfiable' });
    await createInstance(h.ctx, alice, { machineType: 'gb200' });
    await createInstance(h.ctx, alice, { machineType: 'gb200' });
    expect(await rejection(createMetaInstance(h.ctx, alice, { ...request, minNodes: 2 }))).toMatchObject({ status: 409, code: 'quota-exceeded' });
    expect((await h.store.listMetaInstances('acme', { limit: 10 })).items).toEqual([]);
    expect((await createMetaInstance(h.ctx, alice, { ...request, minNodes: 1 })).status).toBe('Ready');
    expect((await h.store.getQuotaUsage('acme', 'gb200'))!.used).toBe(3);
  });

  it('lifting a quota lets creates through again, and is audited with what it was', async () => {
    const h = harness();
    await siteWith(h, { gb200: 2 });
    await setTenant(h.ctx, 'acme', { quotas: { gb200: 0 } }, ops);
    expect(await rejection(createInstance(h.ctx, alice, { machineType: 'gb200' }))).toMatchObject({ status: 409, code: 'quota-exceeded' });
    await setTenant(h.ctx, 'acme', { quotas: {} }, ops);
    expect((await createInstance(h.ctx, alice, { machineType: 'gb200' })).status).toBe('Provisioning');
    const audit = await h.store.listAudit({ target: 'tenants/acme' }, { limit: 10 });
    expect(audit.items.map((e) => [e.action, e.before, e.after])).toEqual([
      ['tenant-quotas-set', { gb200: 0 }, {}],
      ['tenant-quotas-set', {}, { gb200: 0 }],
    ]);
  });
});
