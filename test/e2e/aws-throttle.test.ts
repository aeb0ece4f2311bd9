import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSite, type TestSite } from '#test/support/local-site.ts';
import { retryingClient } from '#test/support/retrying-client.ts';

// FLEETWARD_AWS_SEMANTICS=throttle at ten times its default share: DynamoDB fails a fifth of the site's calls as AWS
// does when a table is busy. Every answer is a success or 503 `throttled` with Retry-After, and a client that retries after it
// gets every instance created and released, with the stream's reactions finishing their work.

let site: TestSite;
let tenant: string;
let client: ReturnType<typeof retryingClient>;

beforeAll(async () => {
  site = await startTestSite({ awsSemantics: { modes: ['throttle'], seed: 20_261_127, throttleShare: 0.2, indexLagMs: 1_000 } });
  tenant = await site.token('acme', ['tenant']);
  client = retryingClient(site, tenant, (r) => r.status === 503);
  const admin = await site.token('provider', ['provider-admin']);
  await site.eventually(async () => (await site.call('GET', '/admin/fleet/summary', { token: admin })).body?.byType?.gb200?.allocatable >= 3, 30_000);
});
afterAll(() => site?.stop());

describe('a site whose DynamoDB throttles', () => {
  // Bounded by its waits, each with a limit of its own, not by the default 30 s for the whole test.
  it('creates and releases instances; every answer is a success or 503 throttled with Retry-After', async () => {
    const created = [];
    for (let i = 0; i < 3; i++) {
      const response = await client.call('POST', '/v2/org/acme/nico/instance', { machineType: 'gb200', name: `throttled-${i}` });
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      created.push(response.body.id as string);
    }
    const status = async (id: string) => (await site.call('GET', `/v2/org/acme/nico/instance/${id}`, { token: tenant })).body?.status;
    for (const id of created) await site.eventually(async () => (await status(id)) === 'Ready', 30_000);
    for (const id of created) expect((await client.call('DELETE', `/v2/org/acme/nico/instance/${id}`)).status).toBeLessThan(300);
    for (const id of created) await site.eventually(async () => (await status(id)) === 'Terminated', 30_000);

    const failures = client.answers.filter((a) => a.status >= 500);
    expect(failures.filter((a) => a.status !== 503 || a.code !== 'throttled' || a.retryAfter !== '1')).toEqual([]);
  }, 120_000);
});
