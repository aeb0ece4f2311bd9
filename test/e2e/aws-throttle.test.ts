import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSite, type TestSite } from '#test/support/local-site.ts';

// FLEETWARD_AWS_SEMANTICS=throttle at ten times its default share: DynamoDB fails a fifth of the site's calls as AWS
// does when a table is busy. Every answer is a success or 503 `throttled` with Retry-After, and a client that retries after it
// gets every instance created and released, with the stream's reactions finishing their work.

let site: TestSite;
let tenant: string;
const answers: Array<{ status: number; code?: string; retryAfter: string | null }> = [];

beforeAll(async () => {
  site = await startTestSite({ awsSemantics: { modes: ['throttle'], seed: 20_261_127, throttleShare: 0.2, indexLagMs: 1_000 } });
  tenant = await site.token('acme', ['tenant']);
  const admin = await site.token('provider', ['provider-admin']);
  await site.eventually(async () => (await site.call('GET', '/admin/fleet/summary', { token: admin })).body?.byType?.gb200?.allocatable >= 3, 30_000);
});
afterAll(() => site?.stop());

/** A client as docs/api.md asks: a 503 is tried again after its Retry-After. */
async function callRetrying(method: string, path: string, body?: unknown) {
  for (;;) {
    const response = await site.call(method, path, {
      token: tenant,
      ...(body ? { body } : {}),
      headers: { 'idempotency-key': `${method} ${path} ${JSON.stringify(body ?? null)}` },
    });
    answers.push({ status: response.status, code: response.body?.code, retryAfter: response.headers.get('retry-after') });
    if (response.status !== 503) return response;
    await new Promise((resolve) => setTimeout(resolve, Number(response.headers.get('retry-after')) * 1000));
  }
}

describe('a site whose DynamoDB throttles', () => {
  it('creates and releases instances; every answer is a success or 503 throttled with Retry-After', async () => {
    const created = [];
    for (let i = 0; i < 3; i++) {
      const response = await callRetrying('POST', '/v2/org/acme/nico/instance', { machineType: 'gb200', name: `throttled-${i}` });
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      created.push(response.body.id as string);
    }
    const status = async (id: string) => (await site.call('GET', `/v2/org/acme/nico/instance/${id}`, { token: tenant })).body?.status;
    for (const id of created) await site.eventually(async () => (await status(id)) === 'Ready', 30_000);
    for (const id of created) expect((await callRetrying('DELETE', `/v2/org/acme/nico/instance/${id}`)).status).toBeLessThan(300);
    for (const id of created) await site.eventually(async () => (await status(id)) === 'Terminated', 30_000);

    const failures = answers.filter((a) => a.status >= 500);
    expect(failures.filter((a) => a.status !== 503 || a.code !== 'throttled' || a.retryAfter !== '1')).toEqual([]);
  });
});
