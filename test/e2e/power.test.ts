import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, testConfig, type TestSite } from '#test/support/local-site.ts';
import { instanceStatus, readySite, runInstance, type Actors } from '#test/support/repair-steps.ts';

// A tenant's power actions (docs/api.md "Power") on a local site: recorded, sent to the simulated agent, which records
// them and can be told to fail them, and the outcome shown on the instance and in its machine's history.

const config = testConfig(`
[instance_create_retry]
base_delay_ms = 10
timeout_ms = 1500
[simulator]
machines = [ { type = "gb200", count = 4, racks = 1 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 20
cleanup_ms = 20
`);

let site: TestSite;
let who: Actors;
beforeAll(async () => {
  ({ site, who } = await readySite(4, { config }));
});
afterAll(async () => site?.stop());

type Received = { kind: string; name?: string; action?: string; outcome?: unknown };
const powerCalls = async (name: string): Promise<Received[]> =>
  ((await site.call('GET', '/_sim/requests')).body.items as Received[]).filter((r) => r.kind === 'power' && r.name === name);

const power = (id: string, action: string) => site.call('POST', `/v2/org/acme/nico/instance/${id}/power`, { token: who.tenant, body: { action } });

/** The instance once its power action is no longer pending. */
const settled = (id: string) =>
  site.eventually(async () => {
    const { body } = await site.call('GET', `/v2/org/acme/nico/instance/${id}`, { token: who.tenant });
    return body.power?.result === 'pending' ? undefined : body;
  }, 20_000);

const historyActions = async (machineId: string): Promise<string[]> =>
  ((await site.call('GET', `/admin/machines/${machineId}/history?limit=100`, { token: who.admin })).body.items as Array<{ action: string }>).map(
    (e) => e.action,
  );

describe('power actions', () => {
  it('a cycle is recorded, sent to the site agent once, and shows on the instance and in the history', async () => {
    const instance = await runInstance(site, who);
    const asked = await power(instance.id, 'cycle');
    expect(asked.status).toBe(202);
    expect(asked.body.power).toMatchObject({ action: 'cycle', state: 'cycling', result: 'pending' });
    const done = await settled(instance.id);
    expect(done.power).toMatchObject({ action: 'cycle', state: 'on', result: 'accepted' });
    expect(done.power.finishedAt).toBeDefined();
    expect(await powerCalls(instance.siteName)).toEqual([expect.objectContaining({ action: 'cycle', outcome: 202 })]);
    expect(await historyActions(instance.machineId)).toEqual(expect.arrayContaining(['power-requested', 'power-accepted']));
  });

  it('off then on: the state follows what the agent accepted', async () => {
    const instance = await runInstance(site, who);
    expect((await power(instance.id, 'off')).status).toBe(202);
    expect((await settled(instance.id)).power).toMatchObject({ action: 'off', state: 'off', result: 'accepted' });
    expect((await power(instance.id, 'on')).body.power).toMatchObject({ action: 'on', state: 'off', result: 'pending' });
    expect((await settled(instance.id)).power).toMatchObject({ action: 'on', state: 'on', result: 'accepted' });
    expect((await powerCalls(instance.siteName)).map((r) => r.action)).toEqual(['off', 'on']);
  });

  it('a passing fault is tried again; the agent refusing fails the action, which leaves the state it found', async () => {
    const instance = await runInstance(site, who);
    await site.call('POST', '/_sim/faults', { body: { op: 'power', outcomes: [503, 404] } });
    expect((await power(instance.id, 'off')).status).toBe(202);
    const failed = await settled(instance.id);
    expect(failed.power).toMatchObject({ action: 'off', state: 'on', result: 'failed' });
    expect(failed.power.error).toContain('404');
    expect((await powerCalls(instance.siteName)).map((r) => r.outcome)).toEqual([503, 404]);
    expect(await historyActions(instance.machineId)).toContain('power-failed');
    // A failed action is done: the next one is taken.
    expect((await power(instance.id, 'off')).status).toBe(202);
    expect((await settled(instance.id)).power).toMatchObject({ state: 'off', result: 'accepted' });
  });

  it('one action at a time; only a running instance; a bad action changes nothing', async () => {
    const instance = await runInstance(site, who);
    // The agent holds the first call open until the client's timeout: the action stays in flight meanwhile.
    await site.call('POST', '/_sim/faults', { body: { op: 'power', outcomes: ['timeout'] } });
    expect((await power(instance.id, 'cycle')).status).toBe(202);
    expectProblem(await power(instance.id, 'off'), 409, 'power-action-in-progress');
    expect((await settled(instance.id)).power).toMatchObject({ action: 'cycle', result: 'accepted' });
    expectProblem(await power(instance.id, 'reboot'), 422);
    expect((await site.call('GET', `/v2/org/acme/nico/instance/${instance.id}`, { token: who.tenant })).body.power.action).toBe('cycle');

    expect((await site.call('DELETE', `/v2/org/acme/nico/instance/${instance.id}`, { token: who.tenant })).status).toBe(202);
    await instanceStatus(site, who.tenant, 'acme', instance.id, 'Terminated');
    expectProblem(await power(instance.id, 'on'), 409, 'invalid-state');
    expectProblem(await site.call('POST', `/v2/org/acme/nico/instance/i-nope/power`, { token: who.tenant, body: { action: 'on' } }), 404);
  });
});
