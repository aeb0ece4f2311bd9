import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '#domain/core/model.ts';
import { sweep } from '#reconcilers/sweep.ts';
import { expectProblem, testConfig, type TestSite } from '#test/support/local-site.ts';
import {
  claimForRepair,
  deliveredOf,
  fastSimulator,
  machineHistory,
  machine,
  readySite,
  repairRelease,
  reportIssue,
  setRepairStatus,
  sources,
  type Actors,
} from '#test/support/repair-steps.ts';

describe('recurring-fault escalation', () => {
  let site: TestSite;
  let who: Actors;

  beforeAll(async () => {
    // One gb200, so every tenant instance lands on the same machine; the h100s only make the fleet big enough
    // that the storm breaker (max_fraction) stays out of the way.
    const config = `${fastSimulator('[ { type = "gb200", count = 1, racks = 1 }, { type = "h100", count = 9, racks = 1 } ]')}
[repair_storm]
max_quarantines = 100
max_fraction = 1
[repair_escalation]
max_repairs = 2
window_days = 30
`;
    ({ site, who } = await readySite(10, { config: testConfig(config) }));
  });
  afterAll(async () => site?.stop());

  async function repairCompleted(machineId: string) {
    const repairInstance = await claimForRepair(site, who, machineId);
    await setRepairStatus(site, who, machineId, 'Completed');
    const after = await repairRelease(site, who, repairInstance, machineId);
    expect(sources(after)).toEqual([]);
    expect(after.allocatable).toBe(true);
  }

  it('a machine repaired twice and reported a third time goes out for repair, naming the earlier reports', { timeout: 90_000 }, async () => {
    const first = { category: 'hardware', summary: 'ECC errors', details: 'DIMM 2' };
    const second = { category: 'PERFORMANCE', summary: 'throttling' };
    const third = { category: 'network', summary: 'IB link flaps' };

    const m = await reportIssue(site, who, first);
    expect(sources(await machine(site, who.admin, m))).toEqual(['repair-request', 'tenant-reported-issue']);
    await repairCompleted(m);

    // Below the limit (1 completed repair): another automated repair request.
    expect(await reportIssue(site, who, second)).toBe(m);
    expect(sources(await machine(site, who.admin, m))).toEqual(['repair-request', 'tenant-reported-issue']);
    await repairCompleted(m);
    await site.eventually(async () => deliveredOf(site, 'RepairRequested', m).length === 2);

    // At the limit (2 completed repairs): out-for-repair instead of a third repair request.
    expect(await reportIssue(site, who, third)).toBe(m);
    const escalated = await machine(site, who.admin, m);
    expect(sources(escalated)).toEqual(['out-for-repair', 'tenant-reported-issue']);
    expect(escalated.allocatable).toBe(false);
    expect(escalated.healthOverrides.find((o: { source: string }) => o.source === 'out-for-repair').issue).toEqual({
      category: 'NETWORK',
      summary: 'IB link flaps',
    });

    const event = await site.eventually(async () => deliveredOf(site, 'RepairEscalated', m)[0]);
    expect(event.detail.earlierReports).toEqual([
      { at: expect.any(String), issue: { category: 'HARDWARE', summary: 'ECC errors', details: 'DIMM 2' } },
      { at: expect.any(String), issue: { category: 'PERFORMANCE', summary: 'throttling' } },
    ]);
    expect(event.detail.issue).toEqual({ category: 'NETWORK', summary: 'IB link flaps' });
    await site.streamIdle();
    expect(deliveredOf(site, 'RepairRequested', m)).toHaveLength(2);
    expect(deliveredOf(site, 'RepairEscalated', m)).toHaveLength(1);

    const entries = await machineHistory(site, who.admin, m);
    const added = entries.find((h) => h.action === 'health-override-added' && h.changes?.healthOverride?.to === 'out-for-repair');
    expect(added).toMatchObject({ actor: 'acme-user', issue: { category: 'NETWORK', summary: 'IB link flaps' } });
    expect(added!.message).toMatch(/^Escalated/);
    expect(entries.some((h) => h.action === 'event-emitted' && h.message === 'RepairEscalated')).toBe(true);

    // Out for repair means people: no repair tenant can claim it, and it is not offered for repair.
    expectProblem(await site.call('POST', '/v2/org/fixit/nico/instance', { token: who.repairer, body: { machineId: m } }), 409, 'machine-unavailable');
    const offered = await site.call('GET', '/v2/org/fixit/nico/machine?healthOverride=repair-request', { token: who.repairer });
    expect(offered.body.items.map((x: { id: string }) => x.id)).not.toContain(m);
  });
});

describe('stuck repairs (offset clock)', () => {
  let site: TestSite;
  let who: Actors;
  let offset = 0;
  const clock: Clock = { now: () => new Date(Date.now() + offset) };
  const MINUTE = 60_000;

  /** Move the site's clock forward and wait for the next heartbeat, so the machines are not stale. */
  async function advanceTo(ms: number) {
    offset = ms;
    const jumped = clock.now().getTime();
    await site.eventually(async () => {
      const beat = await site.ctx.store.getSiteHeartbeat();
      return beat && Date.parse(beat.rosterSeenAt) >= jumped;
    });
  }
  const repairs = async (query = '') => {
    await site.indexesCaughtUp();
    const listed = await site.call('GET', `/admin/repairs${query}`, { token: who.admin });
    expect(listed.status).toBe(200);
    return listed.body.items as Array<{ machineId: string; since: string; waitingMinutes: number; stage: string }>;
  };
  const stuckIds = async () => (await repairs('?stuck=true')).map((r) => r.machineId);

  beforeAll(async () => {
    const config = `${fastSimulator('[ { type = "gb200", count = 6, racks = 2 } ]')}
[repair_storm]
max_quarantines = 100
max_fraction = 1
[repair_sla]
claim_minutes = 60
repair_hours = 24
`;
    ({ site, who } = await readySite(6, { config: testConfig(config), clock }));
  });
  afterAll(async () => site?.stop());

  it('an unclaimed request is stuck after claim_minutes, alerted once; a claim starts a new episode; a past repair_eta makes a claimed repair stuck', {
    timeout: 90_000,
  }, async () => {
    const a = await reportIssue(site, who);
    const requestedAt = (await machine(site, who.admin, a)).healthOverrides.find((o: { source: string }) => o.source === 'repair-request').createdAt;
    expect(await repairs()).toEqual([expect.objectContaining({ machineId: a, since: requestedAt, stage: 'unclaimed', waitingMinutes: 0 })]);

    // 59 minutes: waiting, not stuck, and no alert however often the sweep runs.
    await advanceTo(59 * MINUTE);
    await sweep(site.ctx);
    expect(await stuckIds()).toEqual([]);
    expect(await repairs()).toEqual([expect.objectContaining({ machineId: a, stage: 'unclaimed', waitingMinutes: 59 })]);
    await site.streamIdle();
    expect(deliveredOf(site, 'RepairStuck')).toEqual([]);

    // 61 minutes: stuck, listed with how long it waited, alerted exactly once across several sweeps.
    await advanceTo(61 * MINUTE);
    await sweep(site.ctx);
    const stuck = await repairs('?stuck=true');
    expect(stuck).toEqual([expect.objectContaining({ machineId: a, since: requestedAt, stage: 'unclaimed' })]);
    expect(stuck[0]!.waitingMinutes).toBeGreaterThanOrEqual(60);
    const alert = await site.eventually(async () => deliveredOf(site, 'RepairStuck', a)[0]);
    expect(alert.detail).toMatchObject({ machineId: a, stage: 'unclaimed', since: requestedAt });
    expect(alert.detail.waitingMinutes).toBeGreaterThanOrEqual(60);
    await Promise.all([sweep(site.ctx), sweep(site.ctx)]);
    await sweep(site.ctx);
    await site.streamIdle();
    expect(deliveredOf(site, 'RepairStuck', a)).toHaveLength(1);
    expect((await machineHistory(site, who.admin, a)).filter((h) => h.action === 'event-emitted' && h.message === 'RepairStuck')).toHaveLength(1);

    // A claimed repair whose repair_eta has passed is stuck in repair, well before repair_hours.
    const b = await reportIssue(site, who);
    const bRepair = await claimForRepair(site, who, b);
    expect(bRepair).toEqual(expect.any(String));
    expect(await stuckIds()).toEqual([a]);
    const eta = new Date(clock.now().getTime() - MINUTE).toISOString();
    const labelled = await site.call('PATCH', `/v2/org/fixit/nico/machine/${b}`, { token: who.repairer, body: { labels: { repair_eta: eta } } });
    expect(labelled.status).toBe(200);
    expect((await repairs('?stuck=true')).find((r) => r.machineId === b)).toMatchObject({ stage: 'in-repair' });
    await sweep(site.ctx);
    const bAlert = await site.eventually(async () => deliveredOf(site, 'RepairStuck', b)[0]);
    expect(bAlert.detail).toMatchObject({ machineId: b, stage: 'in-repair', instanceId: bRepair });
    // An eta in the future un-sticks it (the SLA is 24 h away).
    const later = new Date(clock.now().getTime() + 60 * MINUTE).toISOString();
    await site.call('PATCH', `/v2/org/fixit/nico/machine/${b}`, { token: who.repairer, body: { labels: { repair_eta: later } } });
    expect(await stuckIds()).toEqual([a]);

    // Claiming a starts a new episode: in repair, not stuck...
    const aRepair = await claimForRepair(site, who, a);
    const claimedAt = (await repairs()).find((r) => r.machineId === a)!;
    expect(claimedAt).toMatchObject({ stage: 'in-repair', waitingMinutes: 0 });
    expect(claimedAt.since > requestedAt).toBe(true);
    expect(await stuckIds()).toEqual([]);
    // ...just under repair_hours still fine...
    await advanceTo(61 * MINUTE + 24 * 60 * MINUTE - 2 * MINUTE);
    await sweep(site.ctx);
    expect(await stuckIds()).not.toContain(a);
    // ...and past it, stuck again and alerted again, once, for the new episode.
    await advanceTo(61 * MINUTE + 24 * 60 * MINUTE + MINUTE);
    await sweep(site.ctx);
    expect(await repairs('?stuck=true')).toEqual(expect.arrayContaining([expect.objectContaining({ machineId: a, stage: 'in-repair' })]));
    await site.eventually(async () => deliveredOf(site, 'RepairStuck', a).length === 2);
    await sweep(site.ctx);
    await site.streamIdle();
    const aAlerts = deliveredOf(site, 'RepairStuck', a);
    expect(aAlerts).toHaveLength(2);
    expect(aAlerts[1]!.detail).toMatchObject({ stage: 'in-repair', since: claimedAt.since, instanceId: aRepair });
    expect(aAlerts[1]!.detail.waitingMinutes).toBeGreaterThanOrEqual(24 * 60);

    // A finished repair is no longer watched.
    await setRepairStatus(site, who, a, 'Completed');
    await repairRelease(site, who, aRepair, a);
    expect((await repairs()).map((r) => r.machineId)).not.toContain(a);
  });

  it('rejects a bad stuck filter with a 422 problem', async () => {
    expectProblem(await site.call('GET', '/admin/repairs?stuck=yes', { token: who.admin }), 422, 'validation-failed');
    expectProblem(await site.call('GET', '/admin/repairs?stage=unclaimed', { token: who.admin }), 422, 'validation-failed');
    expectProblem(await site.call('GET', '/admin/repairs', { token: who.repairer }), 403);
    expect((await site.call('GET', '/admin/repairs?stuck=false', { token: who.admin })).status).toBe(200);
  });
});
