import { describe, expect, it } from 'vitest';
import type { AgentAlert } from '#domain/repair/agent-alerts.ts';
import { createInstance, releaseInstance } from '#services/instances.ts';
import { tenantPatchMachineLabels } from '#services/machine-actions.ts';
import { createMetaInstance, showMetaInstance } from '#services/meta-instances.ts';
import { resetRepairStorm, showSafety } from '#services/safety.ts';
import { setTenant } from '#services/tenants.ts';
import { beat, harness, siteWith, tenant, type Harness } from '#test/support/service-harness.ts';
import { ops } from '#test/support/fixtures.ts';
import { recordedMembers } from '#test/support/meta-members.ts';

// The site agent's health probes end to end on the services: a beat's alert becomes a hardware-health override
// through the roster-bucket walk, with the repair policy of a tenant's report, and goes when the agent stops
// reporting it.

const gpu: AgentAlert = { id: 'GpuXid79', message: 'GPU 3 fell off the bus', classifications: ['PreventAllocations', 'SuppressExternalAlerting'] };
const roster = (count: number) => Array.from({ length: count }, (_, i) => `gb200-${i + 1}`);
const sources = async (h: Harness, id: string) => (await h.store.getMachine(id))!.healthOverrides.map((o) => o.source).sort();
const emitted = async (h: Harness, id: string) =>
  (await h.store.listHistory(id, { limit: 100 })).items
    .filter((e) => e.action === 'event-emitted')
    .map((e) => e.message)
    .sort();

async function site(autoRepair = true, machines = 20) {
  const h = harness();
  h.ctx.config = { ...h.ctx.config, auto_machine_repair_plugin: { enabled: autoRepair } };
  await siteWith(h, { gb200: machines });
  return h;
}

describe('a health alert in a heartbeat', () => {
  it('auto-repair on: the machine is quarantined with hardware-health and handed to repair; the breaker counts it', async () => {
    const h = await site();
    await beat(h, roster(20), { 'gb200-3': [gpu] });
    const machine = (await h.store.getMachine('gb200-3'))!;
    expect(machine.healthOverrides.find((o) => o.source === 'hardware-health')).toMatchObject({
      mode: 'merge',
      createdBy: 'site-agent',
      alerts: [{ ...gpu, target: 'gb200-3' }],
    });
    expect(await sources(h, 'gb200-3')).toEqual(['hardware-health', 'repair-request']);
    expect(await emitted(h, 'gb200-3')).toEqual(['MachineQuarantined', 'RepairRequested']);
    expect((await h.store.getSafety())!.quarantines).toHaveLength(1);
    expect(await h.store.allocatableMachineIds('gb200')).not.toContain('gb200-3');

    // The same report again: nothing more, no second request.
    await beat(h, roster(20), { 'gb200-3': [gpu] });
    expect(await emitted(h, 'gb200-3')).toEqual(['MachineQuarantined', 'RepairRequested']);
    expect((await h.store.getSafety())!.quarantines).toHaveLength(1);
  });

  it('auto-repair off: only quarantined', async () => {
    const h = await site(false);
    await beat(h, roster(20), { 'gb200-3': [gpu] });
    expect(await sources(h, 'gb200-3')).toEqual(['hardware-health']);
    expect(await emitted(h, 'gb200-3')).toEqual(['MachineQuarantined']);
    expect(await h.store.getSafety()).toBeNull();
  });

  it('an alert that does not prevent allocation changes nothing', async () => {
    const h = await site();
    const result = await beat(h, roster(20), { 'gb200-3': [{ id: 'Fan', message: 'slow', classifications: ['SuppressExternalAlerting'] }] });
    expect(result.changedBuckets).toEqual([]);
    expect(await sources(h, 'gb200-3')).toEqual([]);
  });

  it('clears itself when the agent stops reporting it; the repair request stays', async () => {
    const h = await site();
    await beat(h, roster(20), { 'gb200-3': [gpu] });
    await beat(h, roster(20));
    expect(await sources(h, 'gb200-3')).toEqual(['repair-request']);
    const history = (await h.store.listHistory('gb200-3', { limit: 100 })).items;
    expect(
      history
        .filter((e) => e.actor === 'site-agent' && e.action.startsWith('health-override'))
        .map((e) => e.action)
        .sort(),
    ).toEqual(['health-override-added', 'health-override-added', 'health-override-removed']);
  });

  it('the breaker tripped by a burst of alerts holds the rest back', async () => {
    const h = await site(true, 20);
    // 10% of 20 machines: the third quarantine trips it.
    const alerting = ['gb200-1', 'gb200-2', 'gb200-3', 'gb200-4'];
    await beat(h, roster(20), Object.fromEntries(alerting.map((id) => [id, [gpu]])));
    const safety = await showSafety(h.ctx);
    expect(safety.repairStorm.state).toBe('tripped');
    expect(safety.repairStorm.heldBack.length).toBe(2);
    for (const id of alerting) expect(await sources(h, id)).toContain('hardware-health');
    const requested = await Promise.all(alerting.map(async (id) => (await sources(h, id)).includes('repair-request')));
    expect(requested.filter(Boolean)).toHaveLength(2);

    // A provider's reset hands them to repair, as it does held-back tenant reports.
    const reset = await resetRepairStorm(h.ctx, true, ops);
    expect(reset.applied).toEqual(safety.repairStorm.heldBack);
    for (const id of alerting) expect(await sources(h, id)).toEqual(['hardware-health', 'repair-request']);
  });

  it('a repair tenant can claim the machine; completing the repair leaves hardware-health to the agent', async () => {
    const h = await site();
    const fixit = tenant('fixit', 'repair-bot');
    await setTenant(h.ctx, 'fixit', { capabilities: { targetedInstanceCreation: true } }, ops);
    await beat(h, roster(20), { 'gb200-3': [gpu] });

    const claim = await createInstance(h.ctx, fixit, { machineId: 'gb200-3' });
    await tenantPatchMachineLabels(h.ctx, fixit, 'gb200-3', { repair_status: 'Completed' });
    await releaseInstance(h.ctx, fixit, claim.id, { isRepairTenant: true });
    expect(await sources(h, 'gb200-3')).toEqual(['hardware-health']);

    await beat(h, roster(20));
    expect(await sources(h, 'gb200-3')).toEqual([]);
  });
});

describe('a meta-instance member on a machine the agent reports', () => {
  it('is replaced, from the walk that adds the override, without the sweep', async () => {
    const h = await site(true, 4);
    const alice = tenant('acme', 'alice');
    const created = await createMetaInstance(h.ctx, alice, { machineType: 'gb200', minNodes: 2, placement: { sameRack: false }, labels: {} });
    const [member] = await recordedMembers(h.store, created.id);

    await beat(h, roster(4), { [member!.machineId]: [gpu] });

    const meta = await showMetaInstance(h.ctx, alice, created.id);
    expect(meta.instanceIds).toHaveLength(2);
    expect(meta.instanceIds).not.toContain(member!.id);
    expect((await h.store.getMetaInstance(created.id))!.lastFailureError).toBe(`machine ${member!.machineId}: health-override:hardware-health`);
    expect((await h.store.getInstance(member!.id))!.status).toBe('Terminating');
  });
});
