import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Change } from '#domain/change.ts';
import type { Clock } from '#domain/model.ts';
import type { AppContext } from '#runtime/context.ts';
import { sweep } from '#reconcilers/sweep.ts';
import { resetRepairStorm } from '#services/safety.ts';
import { expectGatewayAnswer, expectProblem, testConfig, type TestSite } from '#test/support/local-site.ts';
import {
  claimForRepair,
  deliveredOf,
  machine,
  readySite,
  repairRelease,
  reportIssue,
  setRepairStatus,
  sources,
  type Actors,
} from '#test/support/repair-steps.ts';
import { ops } from '#test/support/fixtures.ts';

// Fleet safety end to end on a local site: the repair-storm breaker, recurring-fault escalation and
// stuck repairs, through the HTTP API, the stream (events) and the sweep.

const simulator = (machines: string) => `
[instance_create_retry]
base_delay_ms = 10
[simulator]
machines = ${machines}
heartbeat_interval_seconds = 0.2
provision_ms = 10
cleanup_ms = 10
`;

async function history(site: TestSite, admin: string, machineId: string): Promise<Array<Record<string, any>>> {
  return (await site.call('GET', `/admin/machines/${machineId}/history?limit=500`, { token: admin })).body.items;
}

describe('repair-storm breaker', () => {
  let site: TestSite;
  let who: Actors;
  const safety = async () => (await site.call('GET', '/admin/safety', { token: who.admin })).body;

  beforeAll(async () => {
    // Two quarantines an hour are fine; the third trips. max_fraction = 1 keeps the fleet-size limit out of the way.
    ({ site, who } = await readySite(10, {
      config: testConfig(`${simulator('[ { type = "gb200", count = 10, racks = 2 } ]')}\n[repair_storm]\nmax_quarantines = 2\nmax_fraction = 1\n`),
    }));
  });
  afterAll(async () => site?.stop());

  it('trips on the report past the limit, holds back that and later repair requests, lets claimed repairs finish, and a reset applies what it held back', {
    timeout: 90_000,
  }, async () => {
    expect(await safety()).toEqual({ repairStorm: { state: 'closed', heldBack: [] }, replacementsInFlight: 0 });

    // Reports 1 and 2 (at the limit): quarantine plus an automated repair request.
    const m1 = await reportIssue(site, who, { category: 'hardware', summary: 'report 1' });
    expect(sources(await machine(site, who.admin, m1))).toEqual(['repair-request', 'tenant-reported-issue']);
    // A repair tenant picks m1 up before the storm.
    const m1Repair = await claimForRepair(site, who, m1);
    const m2 = await reportIssue(site, who, { category: 'hardware', summary: 'report 2' });
    expect(sources(await machine(site, who.admin, m2))).toEqual(['repair-request', 'tenant-reported-issue']);
    expect((await safety()).repairStorm.state).toBe('closed');

    // Report 3 (just above): quarantined, but no repair request; the breaker trips and says so once.
    const m3 = await reportIssue(site, who, { category: 'network', summary: 'report 3' });
    const m3Now = await machine(site, who.admin, m3);
    expect(sources(m3Now)).toEqual(['tenant-reported-issue']);
    expect(m3Now.allocatable).toBe(false);
    const storm = await site.eventually(async () => deliveredOf(site, 'RepairStormDetected')[0]);
    expect(storm.detail).toMatchObject({ machineId: m3, repairRequestHeldBack: true });
    await site.eventually(async () => deliveredOf(site, 'MachineQuarantined', m3).length === 1);
    expect(deliveredOf(site, 'RepairRequested', m3)).toEqual([]);
    const tripped = await safety();
    expect(tripped.repairStorm).toMatchObject({ state: 'tripped', heldBack: [m3] });
    expect(Date.parse(tripped.repairStorm.trippedAt)).toBeGreaterThan(Date.now() - 60_000);

    // Report 4: held back too, and no second RepairStormDetected.
    const m4 = await reportIssue(site, who, { category: 'hardware', summary: 'report 4' });
    expect(sources(await machine(site, who.admin, m4))).toEqual(['tenant-reported-issue']);
    await site.eventually(async () => deliveredOf(site, 'MachineQuarantined', m4).length === 1);
    await site.streamIdle();
    expect(deliveredOf(site, 'RepairStormDetected')).toHaveLength(1);
    expect(deliveredOf(site, 'RepairRequested', m4)).toEqual([]);
    expect(await safety()).toEqual({
      repairStorm: { state: 'tripped', trippedAt: tripped.repairStorm.trippedAt, heldBack: [m3, m4] },
      replacementsInFlight: 0,
    });
    // A held-back machine is not offered for repair: no repair request, so no repair tenant can claim it.
    const listed = await site.call('GET', '/v2/org/fixit/nico/machine?healthOverride=repair-request', { token: who.repairer });
    expect(listed.body.items.map((m: { id: string }) => m.id).sort()).toEqual([m1, m2].sort());
    const claim = await site.call('POST', '/v2/org/fixit/nico/instance', { token: who.repairer, body: { machineId: m3 } });
    expectProblem(claim, 409, 'machine-unavailable');

    // The repair claimed before the trip finishes normally: Completed returns m1 to the pool.
    await setRepairStatus(site, who, m1, 'Completed');
    const repaired = await repairRelease(site, who, m1Repair, m1);
    expect(sources(repaired)).toEqual([]);
    expect(repaired.allocatable).toBe(true);
    await site.eventually(async () => deliveredOf(site, 'RepairCompleted', m1).length === 1);
    // ...and a request made before the trip can still be claimed during it.
    const m2Repair = await claimForRepair(site, who, m2);
    expect(m2Repair).toEqual(expect.any(String));
    expect((await safety()).repairStorm.state).toBe('tripped');

    // A provider closes it and applies the held-back requests.
    const reset = await site.call('POST', '/admin/safety/repair-storm/reset', { token: who.admin, body: { applyHeldBack: true } });
    expect(reset.status).toBe(200);
    expect(reset.body).toMatchObject({ repairStorm: { state: 'closed', heldBack: [] }, heldBackAtReset: [m3, m4], applied: [m3, m4] });
    expect(reset.body.repairStorm.trippedAt).toBeUndefined();
    for (const id of [m3, m4]) {
      const m = await machine(site, who.admin, id);
      expect(sources(m)).toEqual(['repair-request', 'tenant-reported-issue']);
      // The request carries the tenant's issue, as an automated one would have.
      expect(m.healthOverrides.find((o: { source: string }) => o.source === 'repair-request').issue.summary).toBe(id === m3 ? 'report 3' : 'report 4');
      await site.eventually(async () => deliveredOf(site, 'RepairRequested', id).length === 1);
    }
    expect((await safety()).repairStorm).toEqual({ state: 'closed', heldBack: [] });
    expect(await claimForRepair(site, who, m3)).toEqual(expect.any(String));
  });

  it('validates the reset body while tripped and changes nothing; a reset without applyHeldBack leaves the machines quarantined only', {
    timeout: 90_000,
  }, async () => {
    // The reset above forgot the window: two reports are fine again, the third trips a second time.
    const a = await reportIssue(site, who, { category: 'other', summary: 'second storm 1' });
    const b = await reportIssue(site, who, { category: 'other', summary: 'second storm 2' });
    expect(sources(await machine(site, who.admin, b))).toEqual(['repair-request', 'tenant-reported-issue']);
    const c = await reportIssue(site, who, { category: 'other', summary: 'second storm 3' });
    expect(a).not.toBe(c);
    // c may have been repaired in an earlier test: count only what this test causes.
    await site.streamIdle();
    const requestsForC = deliveredOf(site, 'RepairRequested', c).length;
    const tripped = await safety();
    expect(tripped.repairStorm).toMatchObject({ state: 'tripped', heldBack: [c] });
    await site.eventually(async () => deliveredOf(site, 'RepairStormDetected').length === 2);
    expect(deliveredOf(site, 'RepairStormDetected').at(-1)!.detail.machineId).toBe(c);

    // Bad input: 4xx problems, and the breaker is untouched.
    const path = '/admin/safety/repair-storm/reset';
    expectProblem(await site.call('POST', path, { token: who.admin, body: { applyHeldBack: 'yes' } }), 422, 'validation-failed');
    expectProblem(await site.call('POST', path, { token: who.admin, body: { applyHeldBack: 1 } }), 422, 'validation-failed');
    expectProblem(await site.call('POST', path, { token: who.admin, body: { applyHeldBack: null } }), 422, 'validation-failed');
    expectProblem(await site.call('POST', path, { token: who.admin, body: { applyHeldback: true } }), 422, 'validation-failed');
    expectProblem(await site.call('POST', path, { token: who.admin, body: '{"applyHeldBack": tru' }), 400, 'invalid-json');
    const wrong = await site.call('POST', path, { token: who.admin, body: { applyHeldBack: 'yes' } });
    expect(wrong.body.errors.map((e: { path: string }) => e.path)).toContain('applyHeldBack');
    expectProblem(await site.call('POST', path, { token: who.tenant, body: {} }), 403);
    expectProblem(await site.call('POST', path, { token: who.repairer, body: { applyHeldBack: true } }), 403);
    expectGatewayAnswer(await site.call('POST', path, { body: {} }), 401);
    expectProblem(await site.call('GET', '/admin/safety', { token: who.tenant }), 403);
    expectProblem(await site.call('GET', '/admin/safety?state=tripped', { token: who.admin }), 422, 'validation-failed');
    expect(await safety()).toEqual(tripped);
    expect(sources(await machine(site, who.admin, c))).toEqual(['tenant-reported-issue']);

    // No applyHeldBack (the default): closed, and the held-back machine stays quarantined without a repair request.
    const reset = await site.call('POST', path, { token: who.admin, body: {} });
    expect(reset.status).toBe(200);
    expect(reset.body).toMatchObject({ repairStorm: { state: 'closed', heldBack: [] }, heldBackAtReset: [c], applied: [] });
    expect(sources(await machine(site, who.admin, c))).toEqual(['tenant-reported-issue']);
    await site.streamIdle();
    expect(deliveredOf(site, 'RepairRequested', c)).toHaveLength(requestsForC);
    // Resetting a closed breaker is harmless: nothing held back, nothing applied.
    const again = await site.call('POST', path, { token: who.admin, body: { applyHeldBack: true } });
    expect(again.body).toMatchObject({ repairStorm: { state: 'closed', heldBack: [] }, heldBackAtReset: [], applied: [] });
    expect(sources(await machine(site, who.admin, c))).toEqual(['tenant-reported-issue']);
  });
});

/** The site's context, except that every commit after the first `allowed` fails, as if the process died there. */
function crashingAfter(ctx: AppContext, allowed: number): AppContext {
  let commits = 0;
  const store = new Proxy(ctx.store, {
    get(target, property) {
      if (property === 'commit') {
        return async (change: Change) => {
          if (commits++ >= allowed) throw new Error('simulated crash');
          return target.commit(change);
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { ...ctx, store };
}

describe('a reset that applies held-back repairs, cut short by a crash', () => {
  let site: TestSite;
  let who: Actors;
  const safety = async () => (await site.call('GET', '/admin/safety', { token: who.admin })).body;

  beforeAll(async () => {
    // The first report is fine, every later one is held back.
    ({ site, who } = await readySite(5, {
      config: testConfig(`${simulator('[ { type = "gb200", count = 5, racks = 1 } ]')}\n[repair_storm]\nmax_quarantines = 1\nmax_fraction = 1\n`),
    }));
  });
  afterAll(async () => site?.stop());

  it('leaves every held-back machine either requested or still listed, keeps the breaker tripped, and a second reset finishes', {
    timeout: 90_000,
  }, async () => {
    await reportIssue(site, who, { category: 'hardware', summary: 'before the storm' });
    const held: string[] = [];
    for (const n of [1, 2, 3]) held.push(await reportIssue(site, who, { category: 'hardware', summary: `held back ${n}` }));
    expect((await safety()).repairStorm).toMatchObject({ state: 'tripped', heldBack: held });

    /** The invariant, whatever point the crash hit; returns what is still listed. */
    const eachRequestedOrListed = async (): Promise<string[]> => {
      const storm = (await safety()).repairStorm;
      expect(storm.state).toBe('tripped');
      for (const id of held) {
        const requested = sources(await machine(site, who.admin, id)).includes('repair-request');
        expect(requested, `${id} requested xor listed in ${JSON.stringify(storm.heldBack)}`).toBe(!storm.heldBack.includes(id));
      }
      return storm.heldBack;
    };

    // Before the first commit: nothing happened.
    await expect(resetRepairStorm(crashingAfter(site.ctx, 0), true, ops)).rejects.toThrow('simulated crash');
    expect(await eachRequestedOrListed()).toEqual(held);
    // After the first machine's commit: it is requested and no longer listed, the others wait.
    await expect(resetRepairStorm(crashingAfter(site.ctx, 1), true, ops)).rejects.toThrow('simulated crash');
    expect(await eachRequestedOrListed()).toEqual(held.slice(1));
    // A new attempt resumes with the second machine; this time the crash hits after the last machine, before the close.
    await expect(resetRepairStorm(crashingAfter(site.ctx, 2), true, ops)).rejects.toThrow('simulated crash');
    expect(await eachRequestedOrListed()).toEqual([]);

    // Asking again closes the breaker; there is nothing left to apply.
    const reset = await site.call('POST', '/admin/safety/repair-storm/reset', { token: who.admin, body: { applyHeldBack: true } });
    expect(reset.status).toBe(200);
    expect(reset.body).toMatchObject({ repairStorm: { state: 'closed', heldBack: [] }, heldBackAtReset: [], applied: [] });
    // Every held-back machine got its repair request exactly once, with the tenant's issue.
    for (const [i, id] of held.entries()) {
      const m = await machine(site, who.admin, id);
      expect(m.healthOverrides.find((o: { source: string }) => o.source === 'repair-request').issue.summary).toBe(`held back ${i + 1}`);
      await site.eventually(async () => deliveredOf(site, 'RepairRequested', id).length === 1);
    }
    await site.streamIdle();
    for (const id of held) expect(deliveredOf(site, 'RepairRequested', id)).toHaveLength(1);
  });
});

describe('recurring-fault escalation', () => {
  let site: TestSite;
  let who: Actors;

  beforeAll(async () => {
    // One gb200, so every tenant instance lands on the same machine; the h100s only make the fleet big enough
    // that the storm breaker (max_fraction) stays out of the way.
    const config = `${simulator('[ { type = "gb200", count = 1, racks = 1 }, { type = "h100", count = 9, racks = 1 } ]')}
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

    const entries = await history(site, who.admin, m);
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
    const config = `${simulator('[ { type = "gb200", count = 6, racks = 2 } ]')}
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
    expect((await history(site, who.admin, a)).filter((h) => h.action === 'event-emitted' && h.message === 'RepairStuck')).toHaveLength(1);

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
