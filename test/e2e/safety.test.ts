import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Change } from '#domain/core/change.ts';
import type { AppContext } from '#runtime/context.ts';
import { resetRepairStorm } from '#services/safety.ts';
import { expectGatewayAnswer, expectProblem, testConfig, type TestSite } from '#test/support/local-site.ts';
import {
  claimForRepair,
  deliveredOf,
  fastSimulator,
  machine,
  readySite,
  repairRelease,
  reportIssue,
  setRepairStatus,
  sources,
  type Actors,
} from '#test/support/repair-steps.ts';
import { ops } from '#test/support/fixtures.ts';

describe('repair-storm breaker', () => {
  let site: TestSite;
  let who: Actors;
  const safety = async () => (await site.call('GET', '/admin/safety', { token: who.admin })).body;

  beforeAll(async () => {
    // Two quarantines an hour are fine; the third trips. max_fraction = 1 keeps the fleet-size limit out of the way.
    ({ site, who } = await readySite(10, {
      config: testConfig(`${fastSimulator('[ { type = "gb200", count = 10, racks = 2 } ]')}\n[repair_storm]\nmax_quarantines = 2\nmax_fraction = 1\n`),
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
      config: testConfig(`${fastSimulator('[ { type = "gb200", count = 5, racks = 1 } ]')}\n[repair_storm]\nmax_quarantines = 1\nmax_fraction = 1\n`),
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
