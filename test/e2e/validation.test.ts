import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validationWithinMs } from '#test/support/bounds.ts';
import { startTestSite, TEST_SWEEP_INTERVAL_MS, testConfig, type TestSite } from '#test/support/local-site.ts';
import {
  actors,
  claimForRepair,
  cleanedUp,
  deliveredOf,
  machine,
  reportIssue,
  runInstance,
  setRepairStatus,
  sources,
  type Actors,
} from '#test/support/repair-steps.ts';

// Validated return (docs/api.md "Validation") on a local site: the simulated agent validates every machine after
// registration, after a completed repair and on a provider's demand, and can be told to fail or never report.

const config = testConfig(`
[instance_create_retry]
base_delay_ms = 10
timeout_ms = 2000
[simulator]
machines = [ { type = "gb200", count = 6, racks = 2 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 20
cleanup_ms = 20
validation_ms = 50
[validation]
timeout_minutes = 0.05
# A fleet of 6: the breaker's default share (0.1) would hold back the first repair request.
[repair_storm]
max_fraction = 1
`);

const VALIDATION_WITHIN_MS = validationWithinMs(config, TEST_SWEEP_INTERVAL_MS);
const STUCK_WITHIN_MS = VALIDATION_WITHIN_MS + config.validation.timeout_minutes * 60_000;
/** A test waits for one validation, or two with the stuck one's timeout between them, and a few quick steps around. */
const CASE_WITHIN_MS = STUCK_WITHIN_MS + VALIDATION_WITHIN_MS + 10_000;

let site: TestSite;
let who: Actors;
beforeAll(async () => {
  site = await startTestSite({ config });
  who = await actors(site);
});
afterAll(async () => site?.stop());

type Received = { kind: string; machineId?: string; validationId?: string; reason?: string; outcome?: string };
const validationsSent = async (machineId: string): Promise<Received[]> =>
  ((await site.call('GET', '/_sim/requests')).body.items as Received[]).filter((r) => r.kind === 'validation' && r.machineId === machineId);

const validationOf = async (id: string) => (await machine(site, who.admin, id)).validation;
const finished = (id: string) =>
  site.eventually(async () => ((await validationOf(id))?.state !== 'running' ? machine(site, who.admin, id) : undefined), VALIDATION_WITHIN_MS);

describe('validated return', () => {
  it('every registered machine passed its first validation before the site was ready, and is allocatable', async () => {
    const { body } = await site.call('GET', '/admin/machines', { token: who.admin });
    expect(body.items).toHaveLength(6);
    for (const m of body.items) {
      expect(m.validation).toMatchObject({ state: 'passed', reason: 'registration', suite: 'standard' });
      expect(m.validation.results.map((r: { passed: boolean }) => r.passed)).toEqual([true, true, true]);
      expect(sources(m)).toEqual([]);
    }
    await site.eventually(async () => (await site.call('GET', '/admin/machines?allocatable=true', { token: who.admin })).body.items.length === 6);
    // The events follow the records through the stream, which may deliver late (stream chaos, or AWS).
    await site.eventually(async () => deliveredOf(site, 'ValidationPassed').length >= 6);
  });

  it('a completed repair is validated before the pool takes the machine back', { timeout: CASE_WITHIN_MS }, async () => {
    const id = await reportIssue(site, who, { category: 'hardware', summary: 'Xid 79' });
    const repairInstance = await claimForRepair(site, who, id);
    await setRepairStatus(site, who, id, 'Completed');
    await site.call('POST', `/_sim/machines/${id}/validation`, { body: { outcome: 'pass', delayMs: 600 } });
    const released = await site.call('DELETE', `/v2/org/fixit/nico/instance/${repairInstance}`, { token: who.repairer, body: { isRepairTenant: true } });
    expect(released.status).toBe(202);
    const returning = await cleanedUp(site, who.admin, id);
    expect(returning.validation).toMatchObject({ state: 'running', reason: 'repair' });
    expect(returning.allocatable).toBe(false);
    expect(returning.notAllocatableReasons).toContain('health-override:validation');
    const passed = await finished(id);
    expect(passed.validation).toMatchObject({ state: 'passed', reason: 'repair' });
    expect(passed.allocatable).toBe(true);
    await site.eventually(async () => deliveredOf(site, 'ValidationPassed', id).some((e) => e.detail.reason === 'repair'));
  });

  it('a failed validation is a reported fault: one alert per failed test, and a repair request', { timeout: CASE_WITHIN_MS }, async () => {
    const { body: free } = await site.call('GET', '/admin/machines?allocatable=true', { token: who.admin });
    const id = free.items[0].id as string;
    // The machine may be the one an earlier test sent to repair: its repair requests so far.
    const repairRequestsBefore = deliveredOf(site, 'RepairRequested', id).length;
    await site.call('POST', `/_sim/machines/${id}/validation`, { body: { outcome: 'fail', failing: ['nccl-all-reduce', 'ib-loopback'] } });
    const asked = await site.call('POST', `/admin/machines/${id}/validation`, { token: who.admin });
    expect(asked.status).toBe(202);
    expect(asked.body).toMatchObject({ state: 'running', reason: 'provider' });
    const failed = await finished(id);
    expect(failed.validation).toMatchObject({ id: asked.body.id, state: 'failed', reason: 'provider' });
    expect(sources(failed)).toEqual(['repair-request', 'validation-failed']);
    const override = failed.healthOverrides.find((o: { source: string }) => o.source === 'validation-failed');
    expect(override.alerts.map((a: { id: string }) => a.id).sort()).toEqual(['ValidationFailed:ib-loopback', 'ValidationFailed:nccl-all-reduce']);
    expect(failed.allocatable).toBe(false);
    const event = await site.eventually(async () => deliveredOf(site, 'ValidationFailed', id)[0]);
    expect(event.detail).toMatchObject({ validationId: asked.body.id, reason: 'provider' });
    await site.eventually(async () => deliveredOf(site, 'RepairRequested', id).length === repairRequestsBefore + 1);

    // A report for a validation that is not the current one changes nothing.
    const agent = await site.token('site', ['site-agent']);
    const stale = await site.call('POST', `/site/v1/machines/${id}/validation`, {
      token: agent,
      body: { validationId: asked.body.id, passed: true, results: [] },
    });
    expect(stale.status).toBe(409);
    expect(stale.body.code).toBe('stale-validation');
    // The heartbeat goes on meanwhile; nothing else of the machine moves.
    const { lastHeartbeatAt: _beatBefore, ...before } = failed;
    const { lastHeartbeatAt: _beatAfter, ...after } = await machine(site, who.admin, id);
    expect(after).toEqual(before);
  });

  it('a machine holding an instance is not validated under its tenant', async () => {
    const instance = await runInstance(site, who);
    const refused = await site.call('POST', `/admin/machines/${instance.machineId}/validation`, { token: who.admin });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('machine-in-use');
  });

  it('a validation never reported raises ValidationStuck once and is asked again, whose report then counts', { timeout: CASE_WITHIN_MS }, async () => {
    const { body: free } = await site.call('GET', '/admin/machines?allocatable=true', { token: who.admin });
    const id = free.items[0].id as string;
    await site.call('POST', `/_sim/machines/${id}/validation`, { body: { outcome: 'never' } });
    const asked = await site.call('POST', `/admin/machines/${id}/validation`, { token: who.admin });
    expect(asked.status).toBe(202);
    const stuck = await site.eventually(async () => deliveredOf(site, 'ValidationStuck', id)[0], STUCK_WITHIN_MS);
    expect(stuck.detail).toMatchObject({ validationId: asked.body.id, timeoutMinutes: 0.05 });
    const passed = await finished(id);
    expect(passed.validation).toMatchObject({ id: asked.body.id, state: 'passed' });
    expect(passed.validation.stuckAt).toBeDefined();
    expect((await validationsSent(id)).filter((r) => r.validationId === asked.body.id).map((r) => r.outcome)).toEqual(['never', 'pass']);
    expect(deliveredOf(site, 'ValidationStuck', id)).toHaveLength(1);
  });
});
