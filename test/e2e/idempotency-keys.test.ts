import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSite, type TestSite } from '#test/support/local-site.ts';

// docs/api.md "Idempotency": every POST/PUT/PATCH/DELETE of every caller accepts an Idempotency-Key; a 2xx answer is
// remembered and replayed, anything else is forgotten so that the request can be tried again. Each route group is
// its own Lambda function with its own role, so each must reach the idempotency records (and forget a failure).

let site: TestSite;
const tokens: Record<'tenant' | 'admin' | 'agent', string> = { tenant: '', admin: '', agent: '' };

beforeAll(async () => {
  site = await startTestSite();
  tokens.tenant = await site.token('acme', ['tenant']);
  tokens.admin = await site.token('provider', ['provider-admin']);
  tokens.agent = await site.token('site', ['site-agent']);
  // The tenant's create needs a free machine: the agent's first roster must have made the fleet allocatable.
  await site.eventually(async () => (await site.call('GET', '/admin/fleet/summary', { token: tokens.admin })).body.byType?.gb200?.allocatable > 0);
});

afterAll(async () => {
  await site?.stop();
});

interface Case {
  group: string;
  token: keyof typeof tokens;
  remembered: { method: string; path: string; body: unknown; status: number };
  forgotten: { method: string; path: string; body?: unknown; status: number };
}

const cases: Case[] = [
  {
    group: 'tenant',
    token: 'tenant',
    remembered: { method: 'POST', path: '/v2/org/acme/nico/instance', body: { machineType: 'gb200', name: 'idem-tenant' }, status: 201 },
    forgotten: { method: 'DELETE', path: '/v2/org/acme/nico/instance/no-such-instance', status: 404 },
  },
  {
    group: 'admin',
    token: 'admin',
    remembered: { method: 'PUT', path: '/admin/tenants/idem-org', body: { capabilities: { targetedInstanceCreation: true } }, status: 200 },
    forgotten: {
      method: 'POST',
      path: '/admin/machines/no-such-machine/health-overrides',
      body: { template: 'degraded', message: 'idempotency' },
      status: 404,
    },
  },
  {
    group: 'site-agent',
    token: 'agent',
    remembered: { method: 'POST', path: '/site/v1/heartbeats', body: { machines: [] }, status: 200 },
    forgotten: { method: 'POST', path: '/site/v1/machines/no-such-machine/cleanup', body: { ok: true }, status: 404 },
  },
];

describe.each(cases)('an Idempotency-Key on a $group route', ({ group, token, remembered, forgotten }) => {
  it('replays a 2xx answer', async () => {
    const send = () =>
      site.call(remembered.method, remembered.path, { token: tokens[token], body: remembered.body, headers: { 'idempotency-key': `idem-${group}-ok` } });
    const first = await send();
    expect(first.status, JSON.stringify(first.body)).toBe(remembered.status);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const replay = await send();
    expect(replay.status).toBe(remembered.status);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(first.body);
  });

  it('forgets any other answer, so the request runs again', async () => {
    const send = () =>
      site.call(forgotten.method, forgotten.path, {
        token: tokens[token],
        ...(forgotten.body === undefined ? {} : { body: forgotten.body }),
        headers: { 'idempotency-key': `idem-${group}-failed` },
      });
    for (const attempt of [1, 2]) {
      const answer = await send();
      expect(answer.status, `attempt ${attempt}: ${JSON.stringify(answer.body)}`).toBe(forgotten.status);
      expect(answer.headers.get('idempotent-replayed'), `attempt ${attempt}`).toBeNull();
    }
  });
});
