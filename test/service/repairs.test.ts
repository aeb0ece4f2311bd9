import { describe, expect, it } from 'vitest';
import { createInstance, releaseInstance } from '#services/instances.ts';
import { addHealthOverride } from '#services/machine-actions.ts';
import { resetRepairStorm, showSafety } from '#services/safety.ts';
import { listRepairs } from '#services/stuck-repairs.ts';
import { watchStuckRepairs } from '#reconcilers/stuck-repairs.ts';
import { setTenant } from '#services/tenants.ts';
import { beat, harness, siteWith, tenant, type Harness } from '#test/support/service-harness.ts';
import { ops } from '#test/support/fixtures.ts';

const alice = tenant('acme', 'alice');
const issue = { category: 'HARDWARE' as const, summary: 'GPU fell off the bus' };
const HOUR = 3_600_000;

/** Machines whose tenants reported issues on a fleet small enough that the breaker trips at the first report. */
async function heldBack(h: Harness, count: number): Promise<string[]> {
  await siteWith(h, { gb200: count + 1 });
  const machineIds: string[] = [];
  for (let i = 0; i < count; i++) {
    const instance = await createInstance(h.ctx, alice, { machineType: 'gb200' });
    await releaseInstance(h.ctx, alice, instance.id, { issue });
    machineIds.push(instance.machineId);
  }
  return machineIds;
}

const stuckEvents = async (h: Harness, machineId: string) =>
  (await h.store.listHistory(machineId, { limit: 50 })).items.filter((e) => e.action === 'event-emitted' && e.message === 'RepairStuck');

describe('the repair-storm breaker', () => {
  it('shows what it held back and the replacements in flight', async () => {
    const h = harness();
    const machines = await heldBack(h, 2);
    expect(await showSafety(h.ctx)).toEqual({ repairStorm: expect.objectContaining({ state: 'tripped', heldBack: machines }), replacementsInFlight: 0 });
  });

  it('a reset closes it; with applyHeldBack the held-back repair requests are applied to machines still quarantined', async () => {
    const h = harness();
    const [first, second] = await heldBack(h, 2);
    // One of them was sent out for repair by hand meanwhile: nothing to apply there.
    await addHealthOverride(h.ctx, second!, { template: 'out-for-repair' }, ops);

    const result = await resetRepairStorm(h.ctx, true, ops);
    expect(result).toMatchObject({ repairStorm: { state: 'closed', heldBack: [] }, heldBackAtReset: [first, second], applied: [first] });
    expect((await h.store.getMachine(first!))!.healthOverrides.map((o) => o.source)).toContain('repair-request');
    expect((await h.store.getMachine(second!))!.healthOverrides.map((o) => o.source)).not.toContain('repair-request');
    expect((await h.store.getSafety())!.quarantines).toEqual([]);
  });

  it('a reset without applyHeldBack applies nothing; a reset that loses a race is done again', async () => {
    const h = harness();
    const [machineId] = await heldBack(h, 1);
    h.store.loseCommit('safety');
    expect(await resetRepairStorm(h.ctx, false, ops)).toMatchObject({ repairStorm: { state: 'closed' }, heldBackAtReset: [machineId], applied: [] });
    expect(h.store.attempts.get('safety')).toBe(2);
    expect((await h.store.getMachine(machineId!))!.healthOverrides.map((o) => o.source)).toEqual(['tenant-reported-issue']);
  });
});

describe('stuck repairs', () => {
  async function requested() {
    const h = harness();
    await siteWith(h, { gb200: 2 });
    await addHealthOverride(h.ctx, 'gb200-1', { template: 'request-repair' }, ops);
    return h;
  }

  it('an unclaimed request past the claim SLA raises RepairStuck once per episode and sets the gauge', async () => {
    const h = await requested();
    expect(await watchStuckRepairs(h.ctx)).toEqual([]);
    expect(h.gauges.get('RepairsStuck')).toBe(0);

    h.clock.advance(HOUR + 60_000);
    expect(await watchStuckRepairs(h.ctx)).toEqual([expect.objectContaining({ machineId: 'gb200-1', stage: 'unclaimed', stuck: true })]);
    expect(h.gauges.get('RepairsStuck')).toBe(1);
    expect(await stuckEvents(h, 'gb200-1')).toHaveLength(1);

    // Watching again (a second sweep, or two at once) raises nothing more for the same episode.
    await Promise.all([watchStuckRepairs(h.ctx), watchStuckRepairs(h.ctx)]);
    expect(await stuckEvents(h, 'gb200-1')).toHaveLength(1);
    expect(h.gauges.get('RepairsStuck')).toBe(1);
  });

  it('a claimed repair is a new episode, stuck only after the repair SLA', async () => {
    const h = await requested();
    h.clock.advance(HOUR + 60_000);
    await watchStuckRepairs(h.ctx);
    // The agent kept beating all along: the machine is live when the repair tenant claims it.
    await beat(h, ['gb200-1', 'gb200-2']);
    await setTenant(h.ctx, 'fixit', { capabilities: { targetedInstanceCreation: true } }, ops);
    await createInstance(h.ctx, tenant('fixit', 'bob'), { machineId: 'gb200-1' });
    expect(await watchStuckRepairs(h.ctx)).toEqual([]);

    h.clock.advance(24 * HOUR + 60_000);
    expect(await watchStuckRepairs(h.ctx)).toEqual([expect.objectContaining({ stage: 'in-repair', stuck: true })]);
    expect(await stuckEvents(h, 'gb200-1')).toHaveLength(2);
  });

  it('listRepairs shows every request, or only the stuck ones', async () => {
    const h = await requested();
    h.clock.advance(30 * 60_000);
    await addHealthOverride(h.ctx, 'gb200-2', { template: 'request-repair' }, ops);
    h.clock.advance(31 * 60_000);
    const all = await listRepairs(h.ctx, false, { limit: 10 });
    expect(all.items.map((r) => [r.machineId, r.stuck])).toEqual([
      ['gb200-1', true],
      ['gb200-2', false],
    ]);
    expect((await listRepairs(h.ctx, true, { limit: 10 })).items.map((r) => r.machineId)).toEqual(['gb200-1']);
  });
});
