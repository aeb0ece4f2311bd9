import { describe, expect, it } from 'vitest';
import type { AuditEntry } from '#domain/events/audit.ts';
import { createInstance, releaseInstance } from '#services/instances.ts';
import { addHealthOverride, patchMachineLabels, removeHealthOverride, tenantPatchMachineLabels } from '#services/machine-actions.ts';
import { registerMachines } from '#services/machines.ts';
import { resetRepairStorm } from '#services/safety.ts';
import { setTenant } from '#services/tenants.ts';
import type { FleetStore } from '#store/port.ts';
import { harness, siteWith, tenant, type Harness } from '#test/support/service-harness.ts';
import { NOW, ops } from '#test/support/fixtures.ts';

const at = NOW.toISOString();
const audit = async (store: FleetStore, filter: Parameters<FleetStore['listAudit']>[0] = {}): Promise<AuditEntry[]> =>
  (await store.listAudit(filter, { limit: 500 })).items;

/** A site of two gb200 machines whose registration's audit entry is out of the way. */
async function site(): Promise<Harness> {
  const h = harness();
  await siteWith(h, { gb200: 2 });
  return h;
}

describe('the audit log', () => {
  it('a registration is one entry with its counts, not one per machine', async () => {
    const h = harness();
    await registerMachines(
      h.ctx,
      [
        { id: 'm-1', machineType: 'gb200' },
        { id: 'm-2', machineType: 'gb200' },
      ],
      ops,
    );
    await registerMachines(
      h.ctx,
      [
        { id: 'm-1', machineType: 'h100' },
        { id: 'm-2', machineType: 'gb200' },
        { id: 'm-3', machineType: 'gb200' },
      ],
      { actor: 'bob', requestId: 'req-2' },
    );
    expect(await audit(h.store)).toEqual([
      { at, actor: 'bob', action: 'machines-registered', target: 'machines', after: { added: 1, updated: 1, unchanged: 1 }, requestId: 'req-2' },
      { at, actor: 'ops', action: 'machines-registered', target: 'machines', after: { added: 2, updated: 0, unchanged: 0 }, requestId: 'req-ops' },
    ]);
  });

  it('a registration that changes nothing changes nothing: no entry either', async () => {
    const h = harness();
    await registerMachines(h.ctx, [{ id: 'm-1', machineType: 'gb200' }], ops);
    await registerMachines(h.ctx, [{ id: 'm-1', machineType: 'gb200' }], ops);
    expect(await audit(h.store)).toHaveLength(1);
  });

  it('health overrides added and removed: the override before and after', async () => {
    const h = await site();
    const override = await addHealthOverride(h.ctx, 'gb200-1', { template: 'degraded', message: 'slow NVLink' }, ops);
    const replaced = await addHealthOverride(h.ctx, 'gb200-1', { template: 'degraded', message: 'slower' }, ops);
    await removeHealthOverride(h.ctx, 'gb200-1', 'degraded', { actor: 'bob', requestId: 'req-rm' });
    expect(await audit(h.store, { target: 'machines/gb200-1' })).toEqual([
      { at, actor: 'bob', action: 'health-override-removed', target: 'machines/gb200-1', before: replaced, requestId: 'req-rm' },
      { at, actor: 'ops', action: 'health-override-added', target: 'machines/gb200-1', before: override, after: replaced, requestId: 'req-ops' },
      { at, actor: 'ops', action: 'health-override-added', target: 'machines/gb200-1', after: override, requestId: 'req-ops' },
    ]);
  });

  it('labels: the labels before and after', async () => {
    const h = await site();
    await patchMachineLabels(h.ctx, 'gb200-2', { a: '1', b: '2' }, ops);
    await patchMachineLabels(h.ctx, 'gb200-2', { a: null }, ops);
    expect((await audit(h.store, { target: 'machines/gb200-2' })).map(({ action, before, after }) => ({ action, before, after }))).toEqual([
      { action: 'labels-changed', before: { a: '1', b: '2' }, after: { b: '2' } },
      { action: 'labels-changed', before: {}, after: { a: '1', b: '2' } },
    ]);
  });

  it('capability grants: the capabilities before and after', async () => {
    const h = harness();
    await setTenant(h.ctx, 'fixit', { capabilities: { targetedInstanceCreation: true } }, ops);
    await setTenant(h.ctx, 'fixit', { capabilities: { targetedInstanceCreation: false } }, ops);
    expect(await audit(h.store, { target: 'tenants/fixit' })).toEqual([
      {
        at,
        actor: 'ops',
        action: 'tenant-capabilities-set',
        target: 'tenants/fixit',
        before: { targetedInstanceCreation: true },
        after: { targetedInstanceCreation: false },
        requestId: 'req-ops',
      },
      { at, actor: 'ops', action: 'tenant-capabilities-set', target: 'tenants/fixit', after: { targetedInstanceCreation: true }, requestId: 'req-ops' },
    ]);
  });

  it('a breaker reset: each held-back machine handed over, then the breaker before and after', async () => {
    const h = harness();
    // A fleet small enough that the first tenant report trips the breaker.
    await siteWith(h, { gb200: 2 });
    const alice = tenant('acme', 'alice');
    const instance = await createInstance(h.ctx, alice, { machineType: 'gb200' });
    await releaseInstance(h.ctx, alice, instance.id, { issue: { category: 'HARDWARE', summary: 'GPU fell off the bus' } });
    const tripped = (await h.store.getSafety())!.repairStorm;
    expect(tripped.state).toBe('tripped');

    await resetRepairStorm(h.ctx, true, { actor: 'ops', requestId: 'req-reset' });
    expect((await audit(h.store)).filter((e) => e.requestId === 'req-reset')).toEqual([
      // The hand-over took the machine off the list before the breaker closed.
      {
        at,
        actor: 'ops',
        action: 'repair-storm-reset',
        target: 'safety/repair-storm',
        before: { ...tripped, heldBack: [] },
        after: { state: 'closed', heldBack: [] },
        requestId: 'req-reset',
      },
      {
        at,
        actor: 'ops',
        action: 'held-back-repair-handed-over',
        target: `machines/${instance.machineId}`,
        after: { repairRequestApplied: true },
        requestId: 'req-reset',
      },
    ]);
  });

  it('a commit that loses its race and is decided again leaves one entry', async () => {
    const h = await site();
    h.store.loseCommit('machines');
    await patchMachineLabels(h.ctx, 'gb200-1', { a: '1' }, ops);
    expect(h.store.attempts.get('machines')).toBe(2);
    expect(await audit(h.store, { target: 'machines/gb200-1' })).toHaveLength(1);
  });

  it("a tenant's own label edits are not provider actions", async () => {
    const h = await site();
    const fixit = tenant('fixit', 'fred');
    await setTenant(h.ctx, 'fixit', { capabilities: { targetedInstanceCreation: true } }, ops);
    await addHealthOverride(h.ctx, 'gb200-1', { template: 'request-repair' }, ops);
    const instance = await createInstance(h.ctx, fixit, { machineId: 'gb200-1' });
    await tenantPatchMachineLabels(h.ctx, fixit, instance.machineId, { repair_status: 'InProgress' });
    expect((await h.store.getMachine('gb200-1'))!.labels).toEqual({ repair_status: 'InProgress' });
    expect((await audit(h.store)).map((e) => e.actor)).toEqual(['ops', 'ops', 'ops']);
  });
});
