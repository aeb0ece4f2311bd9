import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSite, type TestSite } from '#test/support/local-site.ts';

// FLEETWARD_AWS_SEMANTICS=overlapping-sweeps: the timer starts a sweep at every firing whatever still runs, and a
// quarter of the firings twice, as the schedule, the follow-up rule and a redelivered invocation can in AWS. The
// sweep's lease turns the second of two overlapping runs away, and the site works as it does without the mode.

let site: TestSite;
let tenant: string;

beforeAll(async () => {
  site = await startTestSite({ sweepIntervalMs: 100, awsSemantics: { modes: ['overlapping-sweeps'], seed: 20_261_127, throttleShare: 0, indexLagMs: 0 } });
  tenant = await site.token('acme', ['tenant']);
  const admin = await site.token('provider', ['provider-admin']);
  await site.eventually(async () => (await site.call('GET', '/admin/fleet/summary', { token: admin })).body?.byType?.gb200?.allocatable >= 2, 30_000);
});
afterAll(() => site?.stop());

const turnedAway = () => site.logLines.filter((line) => line.includes('another run holds the sweep lease')).length;

describe('a site whose sweeps overlap', () => {
  it('turns overlapping runs away by the lease, and creates each instance with one agent create', async () => {
    const created: string[] = [];
    for (let i = 0; i < 2; i++) {
      const response = await site.call('POST', '/v2/org/acme/nico/instance', { token: tenant, body: { machineType: 'gb200', name: `overlap-${i}` } });
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      created.push(response.body.id as string);
    }
    const status = async (id: string) => (await site.call('GET', `/v2/org/acme/nico/instance/${id}`, { token: tenant })).body?.status;
    for (const id of created) await site.eventually(async () => (await status(id)) === 'Ready', 30_000);
    await site.eventually(async () => turnedAway() >= 2, 30_000);
    // A sweep that began after this point still runs to its end: the runs turned away do not count as one.
    await site.afterNextSweep();

    expect(site.counters().sweeps.failed).toBe(0);
    const { body } = await site.call('GET', '/_sim/requests');
    for (const id of created) expect((body.items as Array<{ instanceId: string }>).filter((r) => r.instanceId === id)).toHaveLength(1);
  });
});
