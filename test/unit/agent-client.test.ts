import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSiteAgentClient, type SiteAgentClientOptions } from '#site/agent-client.ts';
import { signingHeaders, verifyRequest, type SigningKey, type SigningKeySet } from '#site/request-signing.ts';
import { keysReadOnDemand, staticKeys } from '#site/signing-keys.ts';

// A scripted agent on 127.0.0.1: it checks each call's signature as an agent does (401 when refused), then each
// signed call takes the next scripted answer; only the backoff sleep is faked.
type Answer = number | 'network' | 'timeout' | { status: number; body: string };

interface Received {
  method: string;
  path: string;
  body: Record<string, string> | undefined;
}
let requestIds: Array<string | undefined> = [];
/** The key id each call came signed with, and whether the agent took the signature. */
let signatures: Array<{ keyId: string | undefined; accepted: boolean }> = [];

const k1: SigningKey = { id: 'k1', secret: 'k1-secret-of-at-least-32-characters' };
const k2: SigningKey = { id: 'k2', secret: 'k2-secret-of-at-least-32-characters' };
const onlyK1: SigningKeySet = { keys: [k1], current: 'k1' };
/** The keys the scripted agent accepts. */
let accepted: SigningKey[] = [k1];

let server: Server;
let baseUrl: string;
let script: Answer[] = [];
let received: Received[] = [];
const held = new Set<ServerResponse>();

beforeAll(async () => {
  server = createServer(async (req, res) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    const verdict = verifyRequest(accepted, { method: req.method ?? '', target: req.url ?? '', body: text, headers: req.headers }, new Date());
    signatures.push({ keyId: req.headers[signingHeaders.keyId] as string | undefined, accepted: verdict.ok });
    if (!verdict.ok) return void res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
    received.push({ method: req.method ?? '', path: req.url ?? '', body: text ? JSON.parse(text) : undefined });
    requestIds.push(req.headers['x-request-id'] as string | undefined);
    const answer = script.shift() ?? { POST: 201, DELETE: 202 }[req.method ?? ''] ?? { status: 200, body: '{"state":"present"}' };
    if (answer === 'network') return void req.socket.destroy();
    if (answer === 'timeout') return void held.add(res);
    if (typeof answer === 'object') return void res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
    const body = answer === 409 ? { code: 'name_conflict' } : { ok: answer < 300 };
    res.writeHead(answer, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(() => {
  for (const res of held) res.destroy();
  held.clear();
  script = [];
  received = [];
  requestIds = [];
  signatures = [];
  accepted = [k1];
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function client(overrides: Partial<SiteAgentClientOptions> = {}) {
  const sleeps: number[] = [];
  const agent = createSiteAgentClient({
    baseUrl,
    maxAttempts: 3,
    baseDelayMs: 250,
    timeoutMs: 2_000,
    keys: staticKeys(onlyK1),
    sleep: async (ms) => void sleeps.push(ms),
    ...overrides,
  });
  return { agent, sleeps };
}

const request = { name: 'job', machineId: 'gb200-r1-01', instanceId: 'i-1', clientToken: 'tok-1' };
const sentNames = () => received.map((r) => r.body?.name);

describe('site agent client: request ids', () => {
  it('sends the request id a call works for as x-request-id on every attempt, and none without one', async () => {
    script = [503];
    const { agent } = client();
    expect(await agent.createInstance(request, { requestId: 'req-1' })).toMatchObject({ ok: true, attempts: 2 });
    expect((await agent.deleteInstance('job', { requestId: 'req-2' })).ok).toBe(true);
    await agent.instanceStatus('job', { requestId: 'req-3' });
    await agent.createInstance(request);
    expect(requestIds).toEqual(['req-1', 'req-1', 'req-2', 'req-3', undefined]);
  });
});

describe('site agent client: signing', () => {
  it('signs every call with the current key, the time in unix seconds and the v1 signature the agent checks', async () => {
    const { agent } = client();
    await agent.createInstance(request);
    await agent.deleteInstance('job r2');
    await agent.instanceStatus('job');
    expect(signatures).toEqual([
      { keyId: 'k1', accepted: true },
      { keyId: 'k1', accepted: true },
      { keyId: 'k1', accepted: true },
    ]);
  });

  it("signs the path as sent: the base URL's own path, the percent-encoded name", async () => {
    const { agent } = client({ baseUrl: `${baseUrl}/agent/v1/` });
    expect(await agent.instanceStatus('job r2')).toEqual({ ok: true, state: 'present' });
    expect(received).toEqual([{ method: 'GET', path: '/agent/v1/instances/job%20r2', body: undefined }]);
    expect(signatures).toEqual([{ keyId: 'k1', accepted: true }]);
  });

  /** An in-memory secret that rotates, read through the same on-demand source the functions use. */
  function rotatingSecret(initial: SigningKeySet) {
    let secret = initial;
    let reads = 0;
    const keys = keysReadOnDemand(async () => (reads++, secret));
    return { keys, reads: () => reads, rotate: (next: SigningKeySet) => void (secret = next) };
  }

  it('after a 401 reads its keys again, sends the call once more with the new key, and keeps that key', async () => {
    const secret = rotatingSecret(onlyK1);
    const { agent, sleeps } = client({ keys: secret.keys });
    expect(await agent.instanceStatus('job')).toEqual({ ok: true, state: 'present' });
    // The key rotated: the secret's current key is k2, and the agent no longer takes k1.
    secret.rotate({ keys: [k1, k2], current: 'k2' });
    accepted = [k2];
    expect(await agent.createInstance(request)).toEqual({ ok: true, siteName: 'job', attempts: 1 });
    expect(signatures.map((s) => `${s.keyId}:${s.accepted}`)).toEqual(['k1:true', 'k1:false', 'k2:true']);
    expect(received.map((r) => r.body?.name)).toEqual([undefined, 'job']);
    expect(secret.reads()).toBe(2);
    expect(sleeps).toEqual([]);
    // From now on straight with k2, without reading the secret again.
    expect((await agent.deleteInstance('job')).ok).toBe(true);
    expect(signatures.at(-1)).toEqual({ keyId: 'k2', accepted: true });
    expect(secret.reads()).toBe(2);
  });

  it('does not loop on a 401 that persists: one read, one more send, and the 401 is the answer', async () => {
    const secret = rotatingSecret(onlyK1);
    accepted = [k2];
    const { agent, sleeps } = client({ keys: secret.keys });
    expect(await agent.createInstance(request)).toMatchObject({
      ok: false,
      attempts: 1,
      reason: 'site agent answered 401 Unauthorized on attempt 1 (not retried: the agent refused the signature, also with the signing keys read again)',
      lastOutcome: { kind: 'http-error', status: 401 },
    });
    expect(await agent.deleteInstance('job')).toEqual({ ok: false, status: 401, reason: 'site agent answered 401 Unauthorized to the delete' });
    expect(await agent.instanceStatus('job')).toEqual({ ok: false, status: 401, reason: 'site agent answered 401 Unauthorized to the status query' });
    // Two sends per call, each refused; one read at the first call, one more after each refusal.
    expect(signatures).toHaveLength(6);
    expect(signatures.every((s) => !s.accepted)).toBe(true);
    expect(received).toEqual([]);
    expect(secret.reads()).toBe(4);
    expect(sleeps).toEqual([]);
  });

  it('sends nothing when its keys cannot be read, and says why', async () => {
    const keys = keysReadOnDemand(() => Promise.reject(new Error('AccessDeniedException: not authorized to perform secretsmanager:GetSecretValue')));
    const { agent, sleeps } = client({ keys });
    const created = await agent.createInstance(request);
    // Nothing reached the agent, so the create-retry rule may try again, as after a refused connection.
    expect(created).toMatchObject({ ok: false, attempts: 3, lastOutcome: { kind: 'network' } });
    expect(created.ok || created.reason).toMatch(/^site agent unreachable on attempt 3: not sent, the signing keys could not be read: AccessDenied/);
    expect(sleeps).toEqual([250, 500]);
    expect(await agent.deleteInstance('job')).toEqual({
      ok: false,
      reason: 'site agent delete not sent: the signing keys could not be read: AccessDeniedException: not authorized to perform secretsmanager:GetSecretValue',
    });
    expect(signatures).toEqual([]);
  });
});

describe('site agent client: create', () => {
  it('creates with the plain name on the first attempt', async () => {
    const { agent, sleeps } = client();
    expect(await agent.createInstance(request)).toEqual({ ok: true, siteName: 'job', attempts: 1 });
    expect(received).toEqual([{ method: 'POST', path: '/instances', body: request }]);
    expect(sleeps).toEqual([]);
  });

  it('retries 500 and 503 with -rN names, the same clientToken and base × attempt waits', async () => {
    script = [500, 503];
    const { agent, sleeps } = client();
    expect(await agent.createInstance(request)).toEqual({ ok: true, siteName: 'job-r3', attempts: 3 });
    expect(sentNames()).toEqual(['job', 'job-r2', 'job-r3']);
    expect(new Set(received.map((r) => r.body?.clientToken))).toEqual(new Set(['tok-1']));
    expect(sleeps).toEqual([250, 500]);
  });

  it('retries a dropped connection under the plain name', async () => {
    script = ['network'];
    const { agent, sleeps } = client();
    expect(await agent.createInstance(request)).toEqual({ ok: true, siteName: 'job', attempts: 2 });
    expect(sentNames()).toEqual(['job', 'job']);
    expect(sleeps).toEqual([250]);
  });

  it('switches to -rN after the first HTTP error even when a network failure came first', async () => {
    script = ['network', 500];
    const { agent } = client();
    expect(await agent.createInstance(request)).toEqual({ ok: true, siteName: 'job-r3', attempts: 3 });
    expect(sentNames()).toEqual(['job', 'job', 'job-r3']);
  });

  it('retries connection refused and reports it once attempts run out', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));

    const { agent, sleeps } = client({ baseUrl: `http://127.0.0.1:${port}` });
    const result = await agent.createInstance(request);
    expect(result).toMatchObject({ ok: false, attempts: 3, retryable: false, lastOutcome: { kind: 'network' } });
    expect(result.ok || result.reason).toMatch(/^site agent unreachable on attempt 3: .*ECONNREFUSED.*\(gave up after 3 attempts\)$/);
    expect(sleeps).toEqual([250, 500]);
  });

  it('a create that fails names the last attempt, which the site may hold after a gateway error', async () => {
    script = [503, 502];
    const { agent } = client();
    expect(await agent.createInstance(request)).toMatchObject({ ok: false, siteName: `${request.name}-r2`, attempts: 2 });
  });

  it.each([
    [502, 'site agent answered 502 Bad Gateway on attempt 1 (not retried: the create may have committed)'],
    [504, 'site agent answered 504 Gateway Timeout on attempt 1 (not retried: the create may have committed)'],
    [400, 'site agent answered 400 Bad Request on attempt 1 (not retried: the agent rejected the request)'],
    [404, 'site agent answered 404 Not Found on attempt 1 (not retried: the agent rejected the request)'],
    [409, 'site agent answered 409 Conflict (name_conflict) on attempt 1 (not retried: the name is already in use at the site)'],
  ])('makes a single attempt on %i', async (status, reason) => {
    script = [status];
    const { agent, sleeps } = client();
    const result = await agent.createInstance(request);
    expect(result).toMatchObject({ ok: false, attempts: 1, reason, retryable: false, lastOutcome: { status } });
    expect(received).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('does not retry an attempt that exceeded the timeout', async () => {
    script = ['timeout'];
    const { agent, sleeps } = client({ timeoutMs: 150 });
    const result = await agent.createInstance(request);
    expect(result).toEqual({
      ok: false,
      siteName: 'job',
      attempts: 1,
      retryable: false,
      reason: 'site agent did not answer within 150 ms on attempt 1 (not retried: the instance may still be provisioning)',
      lastOutcome: { kind: 'timeout', timeoutMs: 150 },
    });
    expect(received).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('stops after the last allowed attempt', async () => {
    script = [503, 500, 503];
    const { agent, sleeps } = client();
    const result = await agent.createInstance(request);
    expect(result).toMatchObject({
      ok: false,
      attempts: 3,
      reason: 'site agent answered 503 Service Unavailable on attempt 3 (gave up after 3 attempts)',
      lastOutcome: { kind: 'http-error', status: 503 },
    });
    expect(sentNames()).toEqual(['job', 'job-r2', 'job-r3']);
    expect(sleeps).toEqual([250, 500]);
  });

  it('max_attempts 1 sends exactly one create', async () => {
    script = [500];
    const { agent, sleeps } = client({ maxAttempts: 1 });
    expect(await agent.createInstance(request)).toMatchObject({ ok: false, attempts: 1 });
    expect(received).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });
});

describe('site agent client: delete', () => {
  it('sends DELETE /instances/{name} and accepts 202', async () => {
    const { agent } = client();
    expect(await agent.deleteInstance('job-r2')).toEqual({ ok: true, status: 202, alreadyGone: false });
    expect(received).toEqual([{ method: 'DELETE', path: '/instances/job-r2', body: undefined }]);
  });

  it('treats 404 as already gone', async () => {
    script = [404];
    expect(await client().agent.deleteInstance('job')).toEqual({ ok: true, status: 404, alreadyGone: true });
  });

  it('returns the error for the caller to retry later, without retrying itself', async () => {
    script = [503];
    expect(await client().agent.deleteInstance('job')).toEqual({
      ok: false,
      status: 503,
      reason: 'site agent answered 503 Service Unavailable to the delete',
    });
    script = ['network'];
    expect(await client().agent.deleteInstance('job')).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^site agent unreachable for the delete: /),
    });
    expect(received).toHaveLength(2);
  });
});

describe('site agent client: instance status', () => {
  it('sends GET /instances/{name} and reads present', async () => {
    expect(await client().agent.instanceStatus('job r2')).toEqual({ ok: true, state: 'present' });
    expect(received).toEqual([{ method: 'GET', path: '/instances/job%20r2', body: undefined }]);
  });

  it('reads cleaning', async () => {
    script = [{ status: 200, body: '{"state":"cleaning"}' }];
    expect(await client().agent.instanceStatus('job')).toEqual({ ok: true, state: 'cleaning' });
  });

  it('reads 404 as absent', async () => {
    script = [404];
    expect(await client().agent.instanceStatus('job')).toEqual({ ok: true, state: 'absent' });
  });

  it.each([
    ['an unknown state', '{"state":"gone"}'],
    ['a body that is not JSON', 'present'],
    ['an extra field', '{"state":"present","extra":1}'],
  ])('turns a 200 with %s into an error', async (_name, body) => {
    script = [{ status: 200, body }];
    expect(await client().agent.instanceStatus('job')).toEqual({
      ok: false,
      status: 200,
      reason: 'site agent answered 200 to the status query with a body that is not { state: "present" | "cleaning" }',
    });
  });

  it('returns other statuses, a dropped connection and a timeout as errors without retrying', async () => {
    script = [503, 'network', 'timeout'];
    // The answered calls get the default timeout; only the call that is never answered needs a short one.
    const { agent, sleeps } = client();
    const silent = client({ timeoutMs: 150 });
    expect(await agent.instanceStatus('job')).toEqual({
      ok: false,
      status: 503,
      reason: 'site agent answered 503 Service Unavailable to the status query',
    });
    expect(await agent.instanceStatus('job')).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^site agent unreachable for the status query: /),
    });
    expect(await silent.agent.instanceStatus('job')).toEqual({ ok: false, reason: 'site agent did not answer the status query within 150 ms' });
    expect(received).toHaveLength(3);
    expect(silent.sleeps).toEqual([]);
    expect(sleeps).toEqual([]);
  });
});
