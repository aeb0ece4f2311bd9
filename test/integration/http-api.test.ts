import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { GetCommand, ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '#domain/core/model.ts';
import { createApiHandler } from '#http/api-handler.ts';
import { createLocalTokenIssuer } from '#http/tokens.ts';
import { expectGatewayAnswer } from '#test/support/local-site.ts';
import { API_FUNCTION_TIMEOUT_SECONDS } from '#lib/function-timeouts.ts';
import { testRoutes } from '#test/support/http-test-routes.ts';
import { createLocalHttpServer, gatewayRoutesOf, type LocalHttpServer } from '#local/api-gateway-adapter.ts';
import { freshTables } from '#test/support/tables.ts';

let server: LocalHttpServer;
let idempotencyTable: string;
let apiHandler: ReturnType<typeof createApiHandler>;
let client: DynamoDBDocumentClient;
let table: string;
let harness: ReturnType<typeof testRoutes>;
const issuer = createLocalTokenIssuer({ issuer: 'fleetward-test', audience: 'fleetward' });
const tokens: Record<string, string> = {};

beforeAll(async () => {
  const tables = await freshTables('http');
  client = tables.client;
  table = tables.names.table;
  harness = testRoutes();
  idempotencyTable = tables.names.idempotencyTable;
  const handler = (apiHandler = createApiHandler(
    harness.routes,
    { client, table },
    {
      idempotency: { client, tableName: tables.names.idempotencyTable },
      logger: new Logger({ serviceName: 'test', logLevel: 'SILENT' }),
    },
  ));
  server = await createLocalHttpServer({
    port: 0,
    routes: gatewayRoutesOf(harness.routes),
    handler,
    verifyToken: (token) => issuer.verify(token),
    extraRoutes: [{ method: 'GET', path: '/health', handle: (_req, res) => void res.writeHead(200).end('ok') }],
    timeoutMs: API_FUNCTION_TIMEOUT_SECONDS * 1000,
  });
  const mint = (sub: string, org: string, roles: Role[], ttl?: number) => issuer.mint({ sub, org, roles }, ttl);
  tokens.alice = await mint('alice', 'acme', ['tenant']);
  tokens.bob = await mint('bob', 'acme', ['tenant']);
  tokens.agent = await mint('agent-1', 'site', ['site-agent']);
  tokens.admin = await mint('root', 'provider', ['provider-admin', 'tenant']);
  tokens.expired = await mint('alice', 'acme', ['tenant'], -60);
});

afterAll(async () => {
  await server?.close();
  client?.destroy();
});

interface Call {
  token?: string;
  body?: unknown;
  raw?: string;
  headers?: Record<string, string>;
}

async function call(method: string, path: string, { token, body, raw, headers = {} }: Call = {}) {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined || raw !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    ...(raw !== undefined ? { body: raw } : body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  const json = /json/.test(response.headers.get('content-type') ?? '') && text ? JSON.parse(text) : undefined;
  return { status: response.status, headers: response.headers, text, json };
}

async function thingCount(): Promise<number> {
  const { Count } = await client.send(new ScanCommand({ TableName: table, Select: 'COUNT' }));
  return Count ?? 0;
}

const expectGateway = (res: Awaited<ReturnType<typeof call>>, status: 401 | 404, token?: 'missing' | 'invalid') =>
  expectGatewayAnswer({ status: res.status, body: res.json, headers: res.headers }, status, token);

const expectProblem = (res: Awaited<ReturnType<typeof call>>, status: number, code: string) => {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  expect(res.json).toMatchObject({ status, code, type: expect.any(String), title: expect.any(String), detail: expect.any(String) });
};

describe('routing and success', () => {
  it('creates and reads a thing, serialising JSON', async () => {
    const created = await call('POST', '/v2/org/acme/things', { token: tokens.alice, body: { name: 'a' } });
    expect(created.status).toBe(201);
    expect(created.headers.get('content-type')).toBe('application/json');
    expect(created.json).toMatchObject({ org: 'acme', name: 'a', createdBy: 'alice' });

    const read = await call('GET', `/v2/org/acme/things/${created.json.id}`, { token: tokens.alice });
    expect(read.status).toBe(200);
    expect(read.json).toEqual({ id: created.json.id, name: 'a' });
  });

  it("answers only what the route's response schema lists", async () => {
    const created = await call('POST', '/v2/org/acme/things', { token: tokens.alice, body: { name: 'b' } });
    // The item as stored carries pk, sk, org and createdBy; the read answers id and name.
    const stored = await client.send(new GetCommand({ TableName: table, Key: { pk: `THING#${created.json.id}`, sk: 'THING' } }));
    expect(stored.Item).toMatchObject({ pk: expect.any(String), sk: 'THING', createdBy: 'alice' });
    expect((await call('GET', `/v2/org/acme/things/${created.json.id}`, { token: tokens.alice })).json).toEqual({ id: created.json.id, name: 'b' });
  });

  it('answers 500 without detail when a handler answers off its contract', async () => {
    for (const answer of ['undeclared-status', 'wrong-body']) {
      const res = await call('GET', `/admin/off-contract?answer=${answer}`, { token: tokens.admin });
      expectProblem(res, 500, 'internal-error');
      // Nothing of the off-contract answer leaks: not its body, not its status (the request id is random hex, so the
      // detail is compared without it).
      expect(res.json.detail.replace(/\(request [^)]*\)/, '')).not.toMatch(/three|299/);
      expect(Object.keys(res.json).sort()).toEqual(['code', 'detail', 'status', 'title', 'type']);
    }
  });

  it('answers 204 without a body and ignores a stray body on a schemaless DELETE', async () => {
    const res = await call('DELETE', `/v2/org/acme/things/${randomUUID()}`, { token: tokens.alice, raw: '{not json' });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
  });

  it('applies list query defaults and limits', async () => {
    expect((await call('GET', '/v2/org/acme/things', { token: tokens.alice })).json).toEqual({ items: [], limit: 50 });
    expect((await call('GET', '/v2/org/acme/things?limit=500', { token: tokens.alice })).json.limit).toBe(500);
    const tooMany = await call('GET', '/v2/org/acme/things?limit=501', { token: tokens.alice });
    expectProblem(tooMany, 422, 'validation-failed');
    expect(tooMany.json.errors).toEqual([{ path: 'query.limit', message: expect.any(String) }]);
  });

  it('serves public routes without a token, extra routes before the Lambda', async () => {
    expect((await call('GET', '/public/ping')).json).toEqual({ sub: 'anonymous' });
    const health = await call('GET', '/health');
    expect([health.status, health.text]).toEqual([200, 'ok']);
  });

  it("answers an unknown path, and a known path's unknown method, with API Gateway's 404 (HTTP APIs have no 405)", async () => {
    expectGateway(await call('GET', '/nope', { token: tokens.alice }), 404);
    expectGateway(await call('GET', '/nope'), 404);
    const wrongMethod = await call('PATCH', '/v2/org/acme/things', { token: tokens.alice, body: {} });
    expectGateway(wrongMethod, 404);
    expect(wrongMethod.headers.get('allow')).toBeNull();
  });
});

describe('authentication and authorization', () => {
  it("API Gateway's 401 without a token on a protected route", async () => {
    expectGateway(await call('GET', '/v2/org/acme/things'), 401, 'missing');
  });

  it("API Gateway's 401 invalid_token for an expired, forged or malformed token; public routes have no authorizer", async () => {
    const before = await thingCount();
    const forged = await createLocalTokenIssuer({ issuer: 'fleetward-test', audience: 'fleetward' }).mint({ sub: 'eve', org: 'acme', roles: ['tenant'] });
    for (const token of [tokens.expired!, forged, 'not-a-jwt']) {
      const res = await call('POST', '/v2/org/acme/things', { token, body: { name: 'x' } });
      expectGateway(res, 401, 'invalid');
    }
    expectGateway(await call('GET', '/v2/org/acme/things', { headers: { authorization: 'Basic abc' } }), 401, 'invalid');
    expect(await thingCount()).toBe(before);
    // A public route is served whatever the Authorization header says, to an anonymous caller.
    const ping = await call('GET', '/public/ping', { headers: { authorization: 'Basic abc' } });
    expect([ping.status, ping.json]).toEqual([200, { sub: 'anonymous' }]);
  });

  it('403 forbidden for the wrong role', async () => {
    expectProblem(await call('GET', '/v2/org/site/things', { token: tokens.agent }), 403, 'forbidden');
    expectProblem(await call('POST', '/admin/boom', { token: tokens.alice }), 403, 'forbidden');
  });

  it("404 not-found for another org's {org}, before validating anything else", async () => {
    expectProblem(await call('GET', `/v2/org/other/things/${randomUUID()}`, { token: tokens.alice }), 404, 'not-found');
    const invalid = await call('POST', '/v2/org/other/things', { token: tokens.alice, raw: '{broken' });
    expectProblem(invalid, 404, 'not-found');
  });

  it('lets provider admins name another org', async () => {
    const res = await call('PUT', '/admin/tenants/acme', { token: tokens.admin, body: { enabled: true } });
    expect(res.json).toEqual({ org: 'acme', enabled: true });
  });
});

describe('input', () => {
  it('400 invalid-json', async () => {
    expectProblem(await call('POST', '/v2/org/acme/things', { token: tokens.alice, raw: '{"name":' }), 400, 'invalid-json');
  });

  it('422 validation-failed with field paths, writing nothing', async () => {
    const before = await thingCount();
    const res = await call('POST', '/v2/org/acme/things', {
      token: tokens.alice,
      body: { name: '', machineHealthIssue: { category: 'cosmic-rays', summary: 'x' }, extra: 1 },
    });
    expectProblem(res, 422, 'validation-failed');
    const paths = (res.json.errors as Array<{ path: string }>).map((e) => e.path).sort();
    expect(paths).toEqual(['extra', 'machineHealthIssue.category', 'name']);
    expectProblem(await call('GET', '/v2/org/acme/things/not-a-uuid', { token: tokens.alice }), 422, 'validation-failed');
    expect((await call('GET', '/v2/org/acme/things/not-a-uuid', { token: tokens.alice })).json.errors[0].path).toBe('params.id');
    expectProblem(await call('POST', '/v2/org/acme/things', { token: tokens.alice }), 422, 'validation-failed');
    expect(await thingCount()).toBe(before);
  });

  it('413 for a body over 1 MiB', async () => {
    const res = await call('POST', '/v2/org/acme/things', { token: tokens.alice, body: { name: 'x'.repeat(1024 * 1024) } });
    expectProblem(res, 413, 'payload-too-large');
  });

  it('turns a thrown problem into problem+json and a bug into a 500 without internals', async () => {
    const res = await call('POST', '/admin/boom', { token: tokens.admin });
    expectProblem(res, 500, 'internal-error');
    expect(res.text).not.toContain('secret');
    expect(res.text).not.toContain('/var/task');
  });
});

describe('Idempotency-Key', () => {
  it('replays the first response for the same key and body, writing nothing more', async () => {
    const key = randomUUID();
    const before = await thingCount();
    const first = await call('POST', '/v2/org/acme/things', {
      token: tokens.alice,
      body: { name: 'once', labels: { a: '1', b: '2' } },
      headers: { 'idempotency-key': key },
    });
    expect(first.status).toBe(201);
    // Same body with keys in another order is the same request.
    const replay = await call('POST', '/v2/org/acme/things', {
      token: tokens.alice,
      body: { labels: { b: '2', a: '1' }, name: 'once' },
      headers: { 'idempotency-key': key },
    });
    expect(replay.status).toBe(201);
    expect(replay.text).toBe(first.text);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await thingCount()).toBe(before + 1);
  });

  it('422 idempotency-key-reused for the same key with another body', async () => {
    const key = randomUUID();
    await call('POST', '/v2/org/acme/things', { token: tokens.alice, body: { name: 'one' }, headers: { 'idempotency-key': key } });
    const before = await thingCount();
    const reused = await call('POST', '/v2/org/acme/things', { token: tokens.alice, body: { name: 'two' }, headers: { 'idempotency-key': key } });
    expectProblem(reused, 422, 'idempotency-key-reused');
    expect(await thingCount()).toBe(before);
  });

  it('keeps callers apart: the same key from two callers runs twice', async () => {
    const key = randomUUID();
    const before = await thingCount();
    const a = await call('POST', '/v2/org/acme/things', { token: tokens.alice, body: { name: 'same' }, headers: { 'idempotency-key': key } });
    const b = await call('POST', '/v2/org/acme/things', { token: tokens.bob, body: { name: 'same' }, headers: { 'idempotency-key': key } });
    expect(a.json.id).not.toBe(b.json.id);
    expect(b.json.createdBy).toBe('bob');
    expect(await thingCount()).toBe(before + 2);
  });

  it('without a key every call executes', async () => {
    const before = await thingCount();
    await call('POST', '/v2/org/acme/things', { token: tokens.alice, body: { name: 'n' } });
    await call('POST', '/v2/org/acme/things', { token: tokens.alice, body: { name: 'n' } });
    expect(await thingCount()).toBe(before + 2);
  });

  it('forgets a key whose call answered with a problem, so a retry executes', async () => {
    const key = randomUUID();
    const first = await call('POST', '/v2/org/acme/flaky', { token: tokens.alice, body: { n: 1 }, headers: { 'idempotency-key': key } });
    expectProblem(first, 409, 'not-yet');
    const retry = await call('POST', '/v2/org/acme/flaky', { token: tokens.alice, body: { n: 1 }, headers: { 'idempotency-key': key } });
    expect(retry.json).toEqual({ calls: 2 });
    const replay = await call('POST', '/v2/org/acme/flaky', { token: tokens.alice, body: { n: 1 }, headers: { 'idempotency-key': key } });
    expect(replay.json).toEqual({ calls: 2 });
  });

  it('409 idempotency-in-progress for a concurrent replay', async () => {
    const key = randomUUID();
    const gate = randomUUID();
    const request = () => call('POST', '/v2/org/acme/slow', { token: tokens.alice, body: { gate }, headers: { 'idempotency-key': key } });
    const first = request();
    await expect.poll(() => harness.hasGate(gate)).toBe(true);
    expectProblem(await request(), 409, 'idempotency-in-progress');
    harness.openGate(gate);
    expect((await first).status).toBe(201);
    const replay = await request();
    expect([replay.status, replay.json]).toEqual([201, { done: gate }]);
  });

  it('a request still running near its deadline is answered 503 throttled with Retry-After, before the gateway gives up', async () => {
    const timeoutMs = 800;
    const short = await createLocalHttpServer({
      port: 0,
      routes: gatewayRoutesOf(harness.routes),
      handler: apiHandler,
      verifyToken: (t) => issuer.verify(t),
      timeoutMs,
    });
    try {
      const gate = randomUUID();
      const response = await fetch(`${short.url}/v2/org/acme/slow`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens.alice}`, 'content-type': 'application/json' },
        body: JSON.stringify({ gate }),
      });
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('1');
      expect((await response.json()).code).toBe('throttled');
      harness.openGate(gate);
    } finally {
      await short.close();
    }
  });

  it('rejects an oversized key', async () => {
    const res = await call('POST', '/v2/org/acme/things', { token: tokens.alice, body: { name: 'k' }, headers: { 'idempotency-key': 'k'.repeat(300) } });
    expectProblem(res, 422, 'validation-failed');
    expect(res.json.errors[0].path).toBe('headers.idempotency-key');
  });
});

describe('behind API Gateway (routeKey chosen, claims from the authorizer)', () => {
  const event = (routeKey: string, rawPath: string, extra: Record<string, unknown> = {}) =>
    ({
      version: '2.0',
      routeKey,
      rawPath,
      rawQueryString: '',
      headers: { 'content-type': 'application/json' },
      requestContext: {
        http: { method: routeKey.split(' ')[0], path: rawPath },
        requestId: randomUUID(),
        authorizer: { jwt: { claims: { sub: 'carol', org: 'acme', roles: '[tenant]' }, scopes: null } },
      },
      isBase64Encoded: false,
      ...extra,
    }) as unknown as Parameters<typeof apiHandler>[0];
  // Contexts built by hand (other tests, tools) may lack the clock; idempotency still bounds INPROGRESS records.
  const context = {} as Parameters<typeof apiHandler>[1];

  it('uses the route key and API Gateway path parameters', async () => {
    const key = randomUUID();
    const create = event('POST /v2/org/{org}/things', '/v2/org/acme/things', {
      body: JSON.stringify({ name: 'direct' }),
      headers: { 'idempotency-key': key },
    });
    const created = await apiHandler(create, context);
    expect(created.statusCode).toBe(201);
    expect(await apiHandler(create, context)).toMatchObject({ statusCode: 201, body: created.body });

    const id = JSON.parse(created.body!).id;
    const read = await apiHandler(event('GET /v2/org/{org}/things/{id}', `/v2/org/acme/things/${id}`, { pathParameters: { org: 'acme', id } }), context);
    expect(JSON.parse(read.body!)).toEqual({ id, name: 'direct' });
  });

  it('stores the whole HTTP result under a hashed, caller-scoped key', async () => {
    const { Items = [] } = await client.send(new ScanCommand({ TableName: idempotencyTable }));
    expect(Items.length).toBeGreaterThan(0);
    for (const item of Items) {
      expect(item.id).toMatch(/^fleetward-http#/);
      expect(item.id).not.toMatch(/alice|bob|carol/);
      expect(item.status).toBe('COMPLETED');
      expect(item.data).toMatchObject({ statusCode: expect.any(Number), body: expect.any(String) });
      expect(item.validation).toEqual(expect.any(String));
      expect(item.in_progress_expiration).toEqual(expect.any(Number));
      // API.md: a replay within 24 h.
      expect(item.expiration - Date.now() / 1000).toBeGreaterThan(24 * 3600 - 120);
    }
  });
});
