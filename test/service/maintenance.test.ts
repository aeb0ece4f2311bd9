import { describe, expect, it } from 'vitest';
import { finishCleanup } from '#domain/instances/cleanup.ts';
import { atItsFullest, type DeclareRequest } from '#domain/maintenance/maintenance.ts';
import { FAN_OUT_CHUNK, maintenanceIdOf, MAINTENANCE_SOURCE } from '#domain/maintenance/maintenance-waves.ts';
import { addMs, iso } from '#domain/core/time.ts';
import { createInstance, releaseInstance } from '#services/instances.ts';
import { registerMachines } from '#services/machines.ts';
import { ITEM_LIMIT_BYTES, itemSizeBytes } from '#store/item-size.ts';
import { maintenanceItem } from '#store/aggregates/maintenance-items.ts';
import { cancel, declare, reportMaintenanceWork, resume, showMaintenance } from '#services/maintenance.ts';
import { askForDeferral, handBack, listForOrg, showForOrg } from '#services/tenant-maintenance.ts';
import { decideOrgDeferral } from '#services/maintenance.ts';
import { maintenanceReconciler } from '#reconcilers/maintenance.ts';
import { registry } from '#reconcilers/registry.ts';
import { sweep } from '#reconcilers/sweep.ts';
import { NOW, ops } from '#test/support/fixtures.ts';
import { harness, reconcile, rejection, siteWith, tenant, type Harness } from '#test/support/service-harness.ts';

const alice = tenant('acme', 'alice');
const DAY = 86_400_000;

const request = (over: Partial<DeclareRequest> = {}): DeclareRequest => ({
  kind: 'planned',
  category: 'firmware',
  reason: 'BMC firmware 2.4',
  scope: { machineIds: ['gb200-1', 'gb200-2', 'gb200-3', 'gb200-4'] },
  handBackBy: iso(addMs(NOW, 14 * DAY)),
  windowMinutes: 240,
  ...over,
});

/** Four gb200 machines; acme holds one of them. */
async function site(): Promise<{ h: Harness; held: string; instanceId: string }> {
  const h = harness();
  await siteWith(h, { gb200: 4 });
  const instance = await createInstance(h.ctx, alice, { machineType: 'gb200' });
  return { h, held: instance.machineId, instanceId: instance.id };
}

const step = (h: Harness, id: string) => reconcile(h.ctx, { entity: 'maintenance', id });
/** One pass of the maintenance reconciler, as one stream reaction or sweep step makes it, without the passes it asks for next. */
async function reconcileOnce(h: Harness, id: string) {
  const decision = maintenanceReconciler.decide((await maintenanceReconciler.load(h.ctx, id))!);
  if (decision.change) await h.store.commit(decision.change);
}
const phases = async (h: Harness, id: string) =>
  Object.fromEntries(Object.entries((await showMaintenance(h.ctx, id)).machines).map(([machineId, m]) => [machineId, m.phase]));
const eventsOf = async (h: Harness, id: string) =>
  (await showMaintenance(h.ctx, id)).history.flatMap((entry) => (entry.event ? [entry.event.type] : [])).sort();

/** The agent's cleanup report for a released machine, as POST /site/v1/machines/{id}/cleanup makes it. */
async function cleanedUp(h: Harness, machineId: string) {
  const machine = (await h.store.getMachine(machineId))!;
  const instance = await h.store.getInstance(machine.cleanup!.instanceId);
  await h.store.commit(finishCleanup(machine, instance, { ok: true }, 'site-agent', h.clock.now()));
}

describe('declaring maintenance', () => {
  it('records the declaration at once and tells the machines and tenants asynchronously', async () => {
    const { h, held, instanceId } = await site();
    const declared = await declare(h.ctx, request(), ops);
    expect(declared).toMatchObject({ state: 'Declared', machineIds: ['gb200-1', 'gb200-2', 'gb200-3', 'gb200-4'], progress: { fannedOut: 0 } });
    expect((await h.store.getMachine(held))!.healthOverrides).toEqual([]);
    // The sweep finds it through the due index, as it would after a crash of the stream's reaction.
    await sweep(h.ctx);
    const machine = (await h.store.getMachine(held))!;
    expect(maintenanceIdOf(machine)).toBe(declared.id);
    expect((await h.store.getInstance(instanceId))!.maintenance).toMatchObject({ id: declared.id, kind: 'planned', handBackBy: declared.handBackBy });
    expect(await eventsOf(h, declared.id)).toEqual(['MaintenanceDeclared']);
    const shown = await showMaintenance(h.ctx, declared.id);
    expect(shown.machines[held]).toMatchObject({ phase: 'held', org: 'acme', instanceId });
    expect(shown.history.at(-1)).toMatchObject({ action: 'maintenance-declared', actor: 'ops' });
    expect((await h.store.listAudit({ target: `maintenance/${declared.id}` }, { limit: 10 })).items).toHaveLength(1);
  });

  it('refuses an overlap naming the machines, and accepts the same machines once the first is cancelled', async () => {
    const { h } = await site();
    const first = await declare(h.ctx, request({ scope: { machineIds: ['gb200-1', 'gb200-2'] } }), ops);
    const overlap = await rejection(declare(h.ctx, request({ scope: { machineIds: ['gb200-2', 'gb200-3'] } }), ops));
    expect([overlap.status, overlap.code]).toEqual([409, 'maintenance-overlap']);
    expect(overlap.message).toContain(`gb200-2 (${first.id})`);
    await cancel(h.ctx, first.id, ops);
    expect((await declare(h.ctx, request({ scope: { machineIds: ['gb200-2'] } }), ops)).state).toBe('Declared');
  });

  it('refuses unknown machines and a deadline too soon, changing nothing', async () => {
    const { h } = await site();
    expect((await rejection(declare(h.ctx, request({ scope: { machineIds: ['gb200-9'] } }), ops))).code).toBe('unknown-scope');
    expect((await rejection(declare(h.ctx, request({ handBackBy: iso(addMs(NOW, 13 * DAY)) }), ops))).code).toBe('hand-back-too-soon');
    expect((await h.store.listMaintenances({ limit: 10 })).items).toEqual([]);
  });
});

describe('waves', () => {
  it('admits free machines up to maxInFlight, asks the agent, and returns them on its ok report until complete', async () => {
    const { h, held, instanceId } = await site();
    const { id } = await declare(h.ctx, request({ rollout: { maxInFlight: 2 } }), ops);
    await step(h, id);
    const started = h.agent.maintenanceStarts.map((s) => s.machineId);
    expect(started).toHaveLength(2);
    expect(h.agent.maintenanceStarts[0]).toMatchObject({ maintenanceId: id, category: 'firmware' });
    expect(started).not.toContain(held);

    const report = await reportMaintenanceWork(h.ctx, started[0]!, { maintenanceId: id, ok: true });
    expect(report).toMatchObject({ changed: true, maintenance: { machines: { [started[0]!]: { phase: 'returned' } } } });
    expect((await h.store.getMachine(started[0]!))!.healthOverrides).toEqual([]);
    expect((await reportMaintenanceWork(h.ctx, started[0]!, { maintenanceId: id, ok: true })).changed).toBe(false);

    await step(h, id);
    expect(h.agent.maintenanceStarts).toHaveLength(3);

    // The tenant hands back early: the release; after cleanup, the machine is admitted, not put back in the pool.
    await handBack(h.ctx, alice, id, [instanceId]);
    await cleanedUp(h, held);
    expect((await h.store.getMachine(held))!.healthOverrides.map((o) => o.source)).toEqual([MAINTENANCE_SOURCE]);
    for (const machineId of started.slice(1)) await reportMaintenanceWork(h.ctx, machineId, { maintenanceId: id, ok: true });
    await reconcile(h.ctx, { entity: 'machine', id: held });
    await step(h, id);
    expect(h.agent.maintenanceStarts.map((s) => s.machineId)).toContain(held);
    for (const { machineId } of h.agent.maintenanceStarts.slice(2)) await reportMaintenanceWork(h.ctx, machineId, { maintenanceId: id, ok: true });

    const done = await showMaintenance(h.ctx, id);
    expect(done.state).toBe('Completed');
    expect(Object.values(await phases(h, id))).toEqual(['returned', 'returned', 'returned', 'returned']);
    expect(done.machines[held]).toMatchObject({ handedBackAt: expect.any(String), startedAt: expect.any(String), returnedAt: expect.any(String) });
    expect(await eventsOf(h, id)).toEqual(['MaintenanceCompleted', 'MaintenanceDeclared']);
  });

  it('halts after haltAfterFailures failures, quarantining the machine, until resumed', async () => {
    const { h } = await site();
    const { id } = await declare(h.ctx, request({ rollout: { maxInFlight: 1, haltAfterFailures: 1 } }), ops);
    await step(h, id);
    const [first] = h.agent.maintenanceStarts;
    await reportMaintenanceWork(h.ctx, first!.machineId, { maintenanceId: id, ok: false, message: 'flash failed' });
    expect((await showMaintenance(h.ctx, id)).state).toBe('Halted');
    expect((await h.store.getMachine(first!.machineId))!.healthOverrides.map((o) => o.source)).toEqual(['tenant-reported-issue']);
    await step(h, id);
    expect(h.agent.maintenanceStarts).toHaveLength(1);
    await resume(h.ctx, id, ops);
    await step(h, id);
    expect(h.agent.maintenanceStarts).toHaveLength(2);
    expect(await eventsOf(h, id)).toContain('MaintenanceHalted');
  });

  it('asks again about a start the agent never answered, once its lease lapsed', async () => {
    const { h } = await site();
    h.agent.willStartMaintenance({ kind: 'error', reason: 'timeout' });
    const { id } = await declare(h.ctx, request({ rollout: { maxInFlight: 1 } }), ops);
    await step(h, id);
    h.clock.advance(h.ctx.config.site_agent.report_timeout_seconds * 1000);
    await sweep(h.ctx);
    const [first, again] = h.agent.maintenanceStarts.map((s) => s.machineId);
    expect(again).toBe(first);
    expect(h.agent.maintenanceStarts).toHaveLength(2);
    expect((await showMaintenance(h.ctx, id)).machines[first!]).toMatchObject({ phase: 'in-maintenance', accepted: true });
  });
});

describe('overdue machines', () => {
  it('are marked once when their window passes, and the sweep publishes how many are not back', async () => {
    const { h } = await site();
    const { id } = await declare(h.ctx, request({ windowMinutes: 60, rollout: { maxInFlight: 1 } }), ops);
    await step(h, id);
    h.clock.advance(61 * 60_000);
    await sweep(h.ctx);
    const overdue = Object.entries((await showMaintenance(h.ctx, id)).machines).filter(([, m]) => m.overdue);
    expect(overdue).toHaveLength(3);
    expect((await eventsOf(h, id)).filter((type) => type === 'MaintenanceOverdue')).toHaveLength(3);
    // The gauge counts what the sweep found at its start: the next one sees the machines marked.
    await sweep(h.ctx);
    expect(h.gauges.get('MaintenanceOverdue')).toBe(3);
    const [admitted] = h.agent.maintenanceStarts;
    await reportMaintenanceWork(h.ctx, admitted!.machineId, { maintenanceId: id, ok: true });
    await sweep(h.ctx);
    expect(h.gauges.get('MaintenanceOverdue')).toBe(2);
    expect((await eventsOf(h, id)).filter((type) => type === 'MaintenanceOverdue')).toHaveLength(3);
  });
});

describe('tenants', () => {
  it('see only their own machines and deferral; a deferral accepted moves their deadline', async () => {
    const { h, held } = await site();
    const { id } = await declare(h.ctx, request(), ops);
    await step(h, id);
    expect(await listForOrg(h.ctx, 'globex')).toEqual([]);
    const [seen] = await listForOrg(h.ctx, 'acme');
    expect(Object.keys(seen!.machines)).toEqual([held]);
    const until = iso(addMs(NOW, 30 * DAY));
    await askForDeferral(h.ctx, alice, id, until, 'a training run ends on the 30th');
    await decideOrgDeferral(h.ctx, id, 'acme', 'accept', ops);
    expect((await showMaintenance(h.ctx, id)).machines[held]!.handBackBy).toBe(until);
  });

  it("an accepted deferral reaches the org's instances, in chunks after the answer, and its view and reminder", async () => {
    const h = harness();
    await siteWith(h, { gb200: FAN_OUT_CHUNK + 5 });
    const instances = await Promise.all(Array.from({ length: FAN_OUT_CHUNK + 5 }, () => createInstance(h.ctx, alice, { machineType: 'gb200' })));
    const scope = { machineIds: instances.map((i) => i.machineId).sort() };
    const { id } = await declare(h.ctx, request({ scope }), ops);
    await step(h, id);
    const noticed = async () => new Set(await Promise.all(instances.map(async (i) => (await h.store.getInstance(i.id))!.maintenance?.handBackBy)));
    const declaredBy = request().handBackBy;
    expect(await noticed()).toEqual(new Set([declaredBy]));

    const until = iso(addMs(NOW, 30 * DAY));
    await askForDeferral(h.ctx, alice, id, until, 'a training run ends on the 30th');
    const decided = await decideOrgDeferral(h.ctx, id, 'acme', 'accept', ops);
    // The answer wrote the maintenance record alone: the notices follow asynchronously, a chunk a step.
    expect(await noticed()).toEqual(new Set([declaredBy]));
    expect(Object.values(decided.machines).filter((m) => m.renotice)).toHaveLength(FAN_OUT_CHUNK + 5);
    await reconcileOnce(h, id);
    expect((await noticed()).size).toBe(2);
    await step(h, id);
    expect(await noticed()).toEqual(new Set([until]));
    expect(Object.values((await showMaintenance(h.ctx, id)).machines).filter((m) => m.renotice)).toEqual([]);

    const [view] = await listForOrg(h.ctx, 'acme');
    expect(view!.handBackBy).toBe(until);
    expect((await showForOrg(h.ctx, 'acme', id)).handBackBy).toBe(until);
    // The reminder goes out for the new deadline, notice_hours before it, and none for the old one.
    h.clock.advance(30 * DAY - 23 * 3_600_000);
    await sweep(h.ctx);
    const reminders = (await showMaintenance(h.ctx, id)).history.flatMap((e) => (e.event?.type === 'MaintenanceHandBackDue' ? [e.event.detail] : []));
    expect(reminders).toEqual([expect.objectContaining({ org: 'acme', handBackBy: until })]);
  });

  it('release of a held instance by the usual route hands it back too', async () => {
    const { h, held, instanceId } = await site();
    const { id } = await declare(h.ctx, request({ rollout: { maxInFlight: 4 } }), ops);
    await step(h, id);
    await releaseInstance(h.ctx, alice, instanceId);
    const cleaning = (await h.store.getMachine(held))!;
    await cleanedUp(h, held);
    // The stream hands the maintenance the machine that came free.
    expect(registry.concernedBy('machine', cleaning, (await h.store.getMachine(held))!, held)).toContainEqual({ entity: 'maintenance', id });
    await step(h, id);
    expect((await showMaintenance(h.ctx, id)).machines[held]).toMatchObject({ phase: 'in-maintenance' });
  });
});

describe('the size of a scope', () => {
  it('declares on 1,000 machines at once, and refuses a scope whose record would outgrow one item, changing nothing', async () => {
    const h = harness();
    await siteWith(h, { gb200: 1_000 });
    const ids = Array.from({ length: 1_000 }, (_, i) => `gb200-${i + 1}`);
    const declared = await declare(h.ctx, request({ scope: { machineIds: ids } }), ops);
    expect(declared.machineIds).toHaveLength(1_000);
    expect(itemSizeBytes(maintenanceItem(atItsFullest(declared), undefined))).toBeLessThan(ITEM_LIMIT_BYTES);

    const long = Array.from({ length: 1_200 }, (_, i) => `${'x'.repeat(100)}-${i}`);
    await registerMachines(
      h.ctx,
      long.map((id) => ({ id, machineType: 'h100', rack: 'r9' })),
      ops,
    );
    const refused = await rejection(declare(h.ctx, request({ scope: { machineIds: long } }), ops));
    expect([refused.status, refused.code]).toEqual([422, 'scope-too-large']);
    expect(refused.message).toMatch(/declare at most about \d+ at once/);
    expect((await h.store.getOpenMaintenances())!.ids).toEqual([declared.id]);
  });
});

describe('the sweep backstop', () => {
  it('finishes a hand-back whose stream record was lost at the resync: the machine joins a wave and the maintenance completes', async () => {
    const { h, held, instanceId } = await site();
    const { id } = await declare(h.ctx, request({ rollout: { maxInFlight: 4 } }), ops);
    await sweep(h.ctx);
    const free = h.agent.maintenanceStarts.map((s) => s.machineId);
    expect(free).toHaveLength(3);
    for (const machineId of free) await reportMaintenanceWork(h.ctx, machineId, { maintenanceId: id, ok: true });
    // Its check at the resync, when nothing had changed, is no news for the stream.
    const unchecked = (await h.store.getMaintenances([id])).get(id)!;
    h.clock.advance(h.ctx.config.maintenance.resync_seconds * 1000);
    await step(h, id);
    const checked = (await h.store.getMaintenances([id])).get(id)!;
    expect(checked.checkedAt).toBe(iso(h.clock.now()));
    expect(registry.concernedBy('maintenance', unchecked, checked, id)).toEqual([]);
    // The tenant releases and cleanup finishes; the stream's reaction to the machine coming free is lost.
    await releaseInstance(h.ctx, alice, instanceId);
    await cleanedUp(h, held);
    await sweep(h.ctx);
    expect((await showMaintenance(h.ctx, id)).machines[held]).toMatchObject({ phase: 'held' });
    h.clock.advance(h.ctx.config.maintenance.resync_seconds * 1000);
    await sweep(h.ctx);
    expect((await showMaintenance(h.ctx, id)).machines[held]).toMatchObject({ phase: 'in-maintenance', handedBackAt: expect.any(String) });
    expect(h.agent.maintenanceStarts.map((s) => s.machineId)).toContain(held);
    await reportMaintenanceWork(h.ctx, held, { maintenanceId: id, ok: true });
    expect((await showMaintenance(h.ctx, id)).state).toBe('Completed');
  });
});

describe('the deadline', () => {
  it('releases what is still held, once, with terminationReason maintenance-enforced', async () => {
    const { h, held, instanceId } = await site();
    const { id } = await declare(h.ctx, request({ windowMinutes: 100 * 24 * 60 }), ops);
    await step(h, id);
    h.clock.advance(14 * DAY);
    await sweep(h.ctx);
    expect(await h.store.getInstance(instanceId)).toMatchObject({ status: 'Terminating', terminationReason: 'maintenance-enforced' });
    expect((await h.store.getMachine(held))!.state).toBe('Cleanup');
    await sweep(h.ctx);
    expect((await eventsOf(h, id)).filter((type) => type === 'MaintenanceEnforced')).toHaveLength(1);
    expect((await showMaintenance(h.ctx, id)).machines[held]).toMatchObject({ phase: 'held', enforcedAt: expect.any(String) });
  });
});

describe('cancelling', () => {
  it('takes the override off machines not yet admitted and the notice off instances; admitted ones finish', async () => {
    const { h, held, instanceId } = await site();
    const { id } = await declare(h.ctx, request({ rollout: { maxInFlight: 1 } }), ops);
    await step(h, id);
    const [admitted] = h.agent.maintenanceStarts;
    await cancel(h.ctx, id, ops);
    await step(h, id);
    expect((await h.store.getMachine(held))!.healthOverrides).toEqual([]);
    expect((await h.store.getInstance(instanceId))!.maintenance).toBeUndefined();
    expect(maintenanceIdOf((await h.store.getMachine(admitted!.machineId))!)).toBe(id);
    await reportMaintenanceWork(h.ctx, admitted!.machineId, { maintenanceId: id, ok: true });
    expect((await h.store.getMachine(admitted!.machineId))!.healthOverrides).toEqual([]);
    expect((await rejection(cancel(h.ctx, id, ops))).code).toBe('invalid-state');
  });
});
