import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliFor, shown, type CliRunner } from '#test/support/cli.ts';
import { expectProblem, startTestSite, type TestSite } from '#test/support/local-site.ts';

// The audit log over HTTP and through `fleetward audit list`: provider actions made through the API are listed
// with the request id API Gateway names each answer with.

describe('the audit log', () => {
  let site: TestSite;
  let ops: string;
  let bob: string;
  let machineId: string;
  /** Request ids of the actions below, as the answers named them. */
  const requests: Record<string, string> = {};
  let startedAt: string;

  const act = async (name: string, token: string, method: string, path: string, body?: unknown) => {
    const response = await site.call(method, path, { token, body });
    expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
    requests[name] = response.headers.get('apigw-requestid')!;
    expect(requests[name]).toEqual(expect.any(String));
  };
  const audit = async (query: string, token = ops) => site.call('GET', `/admin/audit${query}`, { token });

  beforeAll(async () => {
    site = await startTestSite();
    ops = await site.token('provider', ['provider-admin'], 'ops');
    bob = await site.token('provider', ['provider-admin'], 'bob');
    machineId = (await site.call('GET', '/admin/machines?limit=1', { token: ops })).body.items[0].id;
    startedAt = new Date().toISOString();
    await act('labels', ops, 'PATCH', `/admin/machines/${machineId}/labels`, { labels: { rack_slot: '7' } });
    await act('override', bob, 'POST', `/admin/machines/${machineId}/health-overrides`, { template: 'degraded', message: 'slow' });
    await act('tenant', ops, 'PUT', '/admin/tenants/fixit', { capabilities: { targetedInstanceCreation: true } });
    await act('register', bob, 'POST', '/admin/machines', { machines: [{ id: 'audit-new', machineType: 'gb200' }] });
  });
  afterAll(async () => site?.stop());

  it('lists each action with its actor, target, before and after and request id, newest first', async () => {
    const response = await audit(`?since=${startedAt}`);
    expect(response.status).toBe(200);
    expect(response.body.items.map((e: { requestId: string }) => e.requestId)).toEqual([
      requests.register,
      requests.tenant,
      requests.override,
      requests.labels,
    ]);
    expect(response.body.items[3]).toEqual({
      at: expect.any(String),
      actor: 'ops',
      action: 'labels-changed',
      target: `machines/${machineId}`,
      before: {},
      after: { rack_slot: '7' },
      requestId: requests.labels,
    });
    expect(response.body.items[0]).toMatchObject({
      actor: 'bob',
      action: 'machines-registered',
      target: 'machines',
      after: { added: 1, updated: 0, unchanged: 0 },
    });
  });

  it('filters by actor and target, pages with nextToken', async () => {
    const byBob = await audit(`?actor=bob&since=${startedAt}`);
    expect(byBob.body.items.map((e: { requestId: string }) => e.requestId)).toEqual([requests.register, requests.override]);
    const onMachine = await audit(`?target=machines/${machineId}&actor=bob`);
    expect(onMachine.body.items.map((e: { action: string }) => e.action)).toEqual(['health-override-added']);

    const first = await audit(`?since=${startedAt}&limit=3`);
    expect(first.body.items).toHaveLength(3);
    const rest = await audit(`?since=${startedAt}&limit=3&nextToken=${first.body.nextToken}`);
    expect(rest.body.items.map((e: { requestId: string }) => e.requestId)).toEqual([requests.labels]);
  });

  it('refuses bad filters with a 422 problem and tenants with a 403', async () => {
    expectProblem(await audit('?since=yesterday'), 422, 'validation-failed');
    expectProblem(await audit('?who=ops'), 422, 'validation-failed');
    expectProblem(await audit('?actor=ops&nextToken=bm90LWEtdG9rZW4'), 422, 'invalid-page-token');
    expectProblem(await audit('', await site.token('acme', ['tenant'], 'alice')), 403, 'forbidden');
  });

  describe('fleetward audit list', () => {
    let cli: CliRunner;
    beforeAll(() => {
      cli = cliFor(site.url, ops);
    });

    it('a table for people, filtered by --actor, --target and --since', async () => {
      const args = ['audit', 'list', '--actor', 'bob', '--target', `machines/${machineId}`, '--since', startedAt];
      const result = await cli(args);
      expect(result.code, shown(args, result)).toBe(0);
      const lines = result.stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^AT\s+ACTOR\s+ACTION\s+TARGET\s+REQUEST\s+CHANGE$/);
      expect(lines).toHaveLength(2);
      expect(lines[1]).toContain(`bob    health-override-added  machines/${machineId}`);
      expect(lines[1]).toContain(requests.override);
    });

    it('JSON for scripts; --limit caps the listing', async () => {
      const args = ['-o', 'json', 'audit', 'list', '--since', startedAt, '--limit', '2'];
      const result = await cli(args);
      expect(result.code, shown(args, result)).toBe(0);
      expect(result.json().items.map((e: { requestId: string }) => e.requestId)).toEqual([requests.register, requests.tenant]);
    });

    it("API Gateway's 401 for a refused token is reported as such", async () => {
      const result = await cli(['audit', 'list'], { token: 'not-a-jwt' });
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain('Unauthorized');
    });

    it("a bad --since is the API's 422, on stderr", async () => {
      const result = await cli(['audit', 'list', '--since', 'yesterday']);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain('since');
    });
  });
});
