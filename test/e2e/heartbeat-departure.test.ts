import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig, type TestSite } from '#test/support/local-site.ts';
import { readySite, type Actors } from '#test/support/repair-steps.ts';

// The sweep runs once a minute, as in production: a machine that leaves the agent's roster must still cost its
// meta-instance member within the heartbeat timeout and a beat or two, through the beat's stale check alone. The
// timeout is long enough that the member is not yet stale when the roster walk's own commit reaches the meta-instance.
const config = `
[instance_create_retry]
base_delay_ms = 10
[heartbeat]
timeout_seconds = 5
[simulator]
machines = [ { type = "gb200", count = 3, racks = 1 } ]
heartbeat_interval_seconds = 0.5
provision_ms = 10
cleanup_ms = 10
`;

const SWEEP_INTERVAL_MS = 60_000;
const base = '/v2/org/acme/nico/meta-instance';

let site: TestSite;
let who: Actors;

beforeAll(async () => {
  ({ site, who } = await readySite(3, { config: testConfig(config), sweepIntervalMs: SWEEP_INTERVAL_MS }));
});
afterAll(async () => site?.stop());

describe('a machine that leaves the roster, with the sweep once a minute', () => {
  it('has its meta-instance member replaced long before the next sweep', { timeout: 60_000 }, async () => {
    const created = (await site.call('POST', base, { token: who.tenant, body: { machineType: 'gb200', minNodes: 1 } })).body;
    const metaInstance = () => site.call('GET', `${base}/${created.id}`, { token: who.tenant }).then((answer) => answer.body);
    // The fleet's first roster may still be being applied: the meta-instance is placed as soon as machines are live.
    const placed = await site.eventually(async () => {
      const meta = await metaInstance();
      return meta.status === 'Ready' && meta.instanceIds.length === 1 ? meta : undefined;
    }, 10_000);
    const member = (await site.call('GET', `/v2/org/acme/nico/instance/${placed.instanceIds[0]}`, { token: who.tenant })).body;
    const left = Date.now();
    await site.call('POST', `/_sim/machines/${member.machineId}/heartbeat`, { body: { stopped: true } });

    const healed = await site.eventually(async () => {
      const meta = await metaInstance();
      return meta.status === 'Ready' && meta.instanceIds.length === 1 && meta.instanceIds[0] !== member.id ? meta : undefined;
    }, SWEEP_INTERVAL_MS / 2);
    expect(Date.now() - left).toBeLessThan(SWEEP_INTERVAL_MS / 2);
    expect(healed.lastFailureError).toContain('heartbeat-stale');
    await site.call('POST', `/_sim/machines/${member.machineId}/heartbeat`, { body: { stopped: false } });
  });
});
