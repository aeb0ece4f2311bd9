import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSite, type TestSite } from '#test/support/local-site.ts';
import { retryingClient } from '#test/support/retrying-client.ts';

// FLEETWARD_AWS_SEMANTICS=parallel-shards,lambda-timeouts,throttle: the stream delivered in parallel lanes as the
// stack's mapping says, every function stopped at its timeout, and DynamoDB throttling a tenth of the calls. Creates
// made at once contend on shared records (the fleet summary's) from several lanes; every handler leaves within its
// deadline, so no answer is the gateway's 500, and nothing reaches the stream's failure destination.

let site: TestSite;
let tenant: string;
let admin: string;
let client: ReturnType<typeof retryingClient>;

beforeAll(async () => {
  site = await startTestSite({
    awsSemantics: { modes: ['parallel-shards', 'lambda-timeouts', 'throttle'], seed: 20_261_127, throttleShare: 0.1, indexLagMs: 0 },
  });
  tenant = await site.token('acme', ['tenant']);
  client = retryingClient(site, tenant, (r) => r.status === 503 || r.status === 409);
  admin = await site.token('provider', ['provider-admin']);
  await site.eventually(async () => (await site.call('GET', '/admin/fleet/summary', { token: admin })).body?.byType?.gb200?.allocatable >= 4, 60_000);
}, 120_000);
afterAll(() => site?.stop());

describe('a site whose stream runs in parallel lanes and whose functions stop at their timeouts', () => {
  it('creates and releases instances at once; no answer is a 500, and the stream gives nothing up', async () => {
    const created = await Promise.all(
      [0, 1, 2, 3].map(async (i) => {
        const response = await client.call('POST', '/v2/org/acme/nico/instance', { machineType: 'gb200', name: `lanes-${i}` });
        expect(response.status, JSON.stringify(response.body)).toBe(201);
        return response.body.id as string;
      }),
    );
    const status = async (id: string) => (await site.call('GET', `/v2/org/acme/nico/instance/${id}`, { token: tenant })).body?.status;
    for (const id of created) await site.eventually(async () => (await status(id)) === 'Ready', 60_000);
    await Promise.all(created.map(async (id) => expect((await client.call('DELETE', `/v2/org/acme/nico/instance/${id}`)).status).toBeLessThan(300)));
    for (const id of created) await site.eventually(async () => (await status(id)) === 'Terminated', 60_000);
    await site.streamIdle(30_000);

    const failures = client.answers.filter((a) => a.status >= 500);
    expect(failures.filter((a) => a.status !== 503 || a.code !== 'throttled' || a.retryAfter === null)).toEqual([]);
    const counters = site.counters();
    expect(counters.streamFailureDestination.entries).toBe(0);
    expect(counters.streamRecords.expired).toBe(0);
    expect(counters.streamBatches.handled).toBeGreaterThan(0);
  }, 240_000);
});
