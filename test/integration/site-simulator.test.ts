import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { defaultSiteConfig } from '#config/site-config.ts';
import { createSiteAgentClient } from '#site/agent-client.ts';
import { heartbeatBody } from '#site/agent-contract.ts';
import { httpSiteAgent } from '#runtime/site-agent.ts';
import { MAX_CLOCK_SKEW_SECONDS, signRequest, type SigningKey, type SigningKeySet } from '#site/request-signing.ts';
import { keysReadOnDemand, staticKeys } from '#site/signing-keys.ts';
import { demoFleet } from '#local/site-agent/demo-fleet.ts';
import { CONTROLLER_CALL_TIMEOUT_MS } from '#local/site-agent/agent-loops.ts';
import { createSiteSimulator, type SiteSimulator, type SiteSimulatorOptions } from '#local/site-agent/simulator.ts';

// The controller is not under test here: a stub records what the simulated agent sends it.
interface ControllerCall {
  path: string;
  authorization: string | undefined;
  body: any;
}

let controller: Server;
let controllerUrl: string;
let calls: ControllerCall[] = [];
let controllerDown = false;
// Cleanup reports turned away while the controller is down.
let refused = 0;

const machines = demoFleet([{ type: 'gb200', count: 4, racks: 2 }]);
const newKey = (id: string): SigningKey => ({ id, secret: randomBytes(32).toString('hex') });
// The key the agent of each test starts with, as the local runner makes one per run.
const k1 = newKey('k1');
const onlyK1: SigningKeySet = { keys: [k1], current: k1.id };
let sim: SiteSimulator;
let simUrl: string;

// The agent of each test, and from its timings the longest it may take to do what a test waits for: the next beat
// or two, a create's provisioning, a cleanup with every retry of its report, and one call the controller may leave
// unanswered until the agent gives up on it.
const HEARTBEAT_INTERVAL_MS = 50;
const PROVISION_MS = 20;
const CLEANUP_MS = 20;
const REPORT_RETRY_DELAYS_MS = [30, 30, 30];
const AGENT_ACTS_WITHIN_MS =
  2 * HEARTBEAT_INTERVAL_MS + PROVISION_MS + CLEANUP_MS + REPORT_RETRY_DELAYS_MS.reduce((a, b) => a + b, 0) + CONTROLLER_CALL_TIMEOUT_MS;

/** An agent of the fleet above that reports to the stub controller, with these options changed. */
const simulatorWith = (options: Partial<SiteSimulatorOptions> = {}): SiteSimulator =>
  createSiteSimulator({
    machines,
    controllerUrl: () => controllerUrl,
    token: async () => 'agent-token',
    signingKeys: [k1],
    heartbeatIntervalMs: HEARTBEAT_INTERVAL_MS,
    provisionMs: PROVISION_MS,
    cleanupMs: CLEANUP_MS,
    ...options,
  });

beforeAll(async () => {
  controller = createServer(async (req, res) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    if (controllerDown) {
      if (req.url?.endsWith('/cleanup')) refused++;
      return void res.writeHead(503).end();
    }
    calls.push({ path: req.url ?? '', authorization: req.headers.authorization, body: JSON.parse(text) });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((resolve) => controller.listen(0, '127.0.0.1', resolve));
  controllerUrl = `http://127.0.0.1:${(controller.address() as AddressInfo).port}`;
});

afterAll(async () => {
  controller.closeAllConnections();
  await new Promise<void>((resolve) => controller.close(() => resolve()));
});

beforeEach(async () => {
  calls = [];
  controllerDown = false;
  sim = simulatorWith({ reportRetryDelaysMs: REPORT_RETRY_DELAYS_MS });
  await sim.start();
  simUrl = sim.url;
});

afterEach(async () => {
  await sim.stop();
});

interface Sent {
  body?: string;
  /** Signed with these keys' current one (null: not signed at all). */
  keys?: SigningKeySet | null;
  /** When it was signed. */
  at?: Date;
  /** Sent over the signature's own headers: a test's forgery. */
  headers?: Record<string, string>;
}

/** A request to the agent as the controller sends one: signed by default, over exactly the bytes that go. */
async function send(method: string, path: string, sent: Sent = {}) {
  const body = sent.body ?? '';
  const keys = sent.keys === undefined ? onlyK1 : sent.keys;
  const signature = keys ? signRequest(keys, { method, target: path, body }, sent.at ?? new Date()) : {};
  const response = await fetch(`${simUrl}${path}`, {
    method,
    headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...signature, ...sent.headers },
    ...(body ? { body } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

const call = (method: string, path: string, body?: unknown) => send(method, path, body === undefined ? {} : { body: JSON.stringify(body) });

const create = (name: string, clientToken: string, machineId = 'gb200-r1-01') =>
  call('POST', '/instances', { name, machineId, instanceId: `i-${name}`, clientToken });

async function eventually<T>(probe: () => T | undefined | Promise<T | undefined>, timeoutMs = AGENT_ACTS_WITHIN_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const heartbeats = () => calls.filter((c) => c.path === '/site/v1/heartbeats');
const rosterIds = (call: ControllerCall) => call.body.machines.map((m: { id: string }) => m.id);

function agentClient(timeoutMs = 2_000, keys = staticKeys(onlyK1)) {
  const sleeps: number[] = [];
  const client = createSiteAgentClient({
    baseUrl: simUrl,
    maxAttempts: 3,
    baseDelayMs: 250,
    timeoutMs,
    keys,
    sleep: async (ms) => void sleeps.push(ms),
  });
  return { client, sleeps };
}

describe('demoFleet', () => {
  it('gives stable ids and spreads each group evenly over its own racks', () => {
    const fleet = demoFleet([
      { type: 'gb200', count: 5, racks: 2 },
      { type: 'h100', count: 2, racks: 1 },
    ]);
    expect(fleet).toEqual([
      { id: 'gb200-r1-01', machineType: 'gb200', rack: 'rack-1' },
      { id: 'gb200-r1-02', machineType: 'gb200', rack: 'rack-1' },
      { id: 'gb200-r1-03', machineType: 'gb200', rack: 'rack-1' },
      { id: 'gb200-r2-01', machineType: 'gb200', rack: 'rack-2' },
      { id: 'gb200-r2-02', machineType: 'gb200', rack: 'rack-2' },
      { id: 'h100-r3-01', machineType: 'h100', rack: 'rack-3' },
      { id: 'h100-r3-02', machineType: 'h100', rack: 'rack-3' },
    ]);
    expect(new Set(demoFleet([{ type: 'gb200', count: 16, racks: 2 }]).map((m) => m.id)).size).toBe(16);
  });
});

describe('simulated site agent: listening before it starts', () => {
  it('holds its port and answers the agent API, but beats nothing until started', async () => {
    // Every call the agent makes to the controller asks for its URL first.
    let controllerAsked = 0;
    const early = simulatorWith({
      controllerUrl: () => {
        controllerAsked++;
        return controllerUrl;
      },
    });
    try {
      await early.listen();
      const requests = await fetch(`${early.url}/_sim/requests`);
      expect(await requests.json()).toEqual({ items: [] });
      await new Promise((resolve) => setTimeout(resolve, 3 * HEARTBEAT_INTERVAL_MS));
      expect(controllerAsked).toBe(0);
      expect(early.running()).toBe(false);
      const url = early.url;
      await early.start();
      expect(early.url).toBe(url);
      await eventually(() => (controllerAsked > 0 ? true : undefined));
    } finally {
      await early.stop();
    }
  });
});

describe('simulated site agent: work taken before it starts', () => {
  it('does a validation it accepted while only listening once it starts, and reports it then', async () => {
    const early = simulatorWith({ validationMs: 10 });
    const validations = () => calls.filter((c) => c.path.endsWith('/validation'));
    try {
      await early.listen();
      simUrl = early.url;
      const request = { validationId: 'v-early', suite: 'standard', reason: 'registration' };
      expect((await call('POST', '/machines/gb200-r1-01/validation', request)).status).toBe(202);
      await new Promise((resolve) => setTimeout(resolve, 5 * HEARTBEAT_INTERVAL_MS));
      expect(validations()).toEqual([]);
      await early.start();
      const [reported] = await eventually(() => (validations().length > 0 ? validations() : undefined));
      expect(reported).toMatchObject({ path: '/site/v1/machines/gb200-r1-01/validation', body: { validationId: 'v-early', passed: true } });
    } finally {
      await early.stop();
    }
  });
});

describe('simulated site agent: creates', () => {
  it('honours clientToken: a repeated create answers 201 and never creates twice', async () => {
    expect(await create('job', 'tok-a')).toEqual({ status: 201, body: { name: 'job', machineId: 'gb200-r1-01' } });
    expect(await create('job', 'tok-a')).toEqual({ status: 201, body: { name: 'job', machineId: 'gb200-r1-01' } });
    // Same token under a retry name: still the one instance already made.
    expect(await create('job-r2', 'tok-a')).toEqual({ status: 201, body: { name: 'job', machineId: 'gb200-r1-01' } });
    expect((await call('DELETE', '/instances/job-r2')).status).toBe(404);
  });

  it('answers 409 name_conflict for an existing name under another token', async () => {
    await create('job', 'tok-a');
    const conflict = await create('job', 'tok-b');
    expect(conflict.status).toBe(409);
    expect(conflict.body.code).toBe('name_conflict');
    const { body } = await call('GET', '/_sim/requests');
    expect(body.items.map((r: { outcome: unknown; clientToken: string }) => [r.clientToken, r.outcome])).toEqual([
      ['tok-a', 201],
      ['tok-b', 409],
    ]);
    expect(body.items[0]).toMatchObject({ name: 'job', machineId: 'gb200-r1-01', instanceId: 'i-job' });
    expect(Date.parse(body.items[0].at)).not.toBeNaN();
  });

  it('plays queued faults in order, then goes back to success', async () => {
    expect((await call('POST', '/_sim/faults', { op: 'create', outcomes: [503, 502, 409] })).status).toBe(200);
    const statuses = [];
    for (const token of ['t1', 't2', 't3', 't4']) statuses.push((await create(`n-${token}`, token)).status);
    expect(statuses).toEqual([503, 502, 409, 201]);
    // A 503 did not create; a 502 may have: its name is left behind.
    expect((await call('DELETE', '/instances/n-t1')).status).toBe(404);
    expect((await call('DELETE', '/instances/n-t2')).status).toBe(202);
  });

  it('rejects a fault it cannot play with a problem+json 422 naming the field, and queues nothing', async () => {
    const unplayable = await call('POST', '/_sim/faults', { op: 'create', outcomes: [503, 'sometimes'] });
    expect(unplayable.status).toBe(422);
    expect(unplayable.body).toMatchObject({
      code: 'validation-failed',
      errors: [{ path: 'outcomes.1', message: expect.stringContaining('"network", "timeout" or one of') }],
    });
    expect((await call('POST', '/_sim/faults', { op: 'reboot', outcomes: [] })).status).toBe(422);
    expect((await call('POST', '/_sim/faults', { op: 'cleanup', outcomes: ['yes'] })).status).toBe(422);
    expect((await call('GET', '/_sim/faults')).body).toEqual({ create: [], cleanup: [], maintenance: [], power: [] });
    expect((await call('POST', '/_sim/machines/gb200-r1-01/heartbeat', { stopped: 'yes' })).status).toBe(422);
  });

  it('clears the request log', async () => {
    await create('job', 'tok-a');
    expect((await call('DELETE', '/_sim/requests')).status).toBe(204);
    expect((await call('GET', '/_sim/requests')).body).toEqual({ items: [] });
  });
});

describe('simulated site agent: signed calls only', () => {
  const unauthorized = { status: 401, body: { error: 'unauthorized' } };
  const createBody = JSON.stringify({ name: 'job', machineId: 'gb200-r1-01', instanceId: 'i-job', clientToken: 'tok-a' });
  const requestsSeen = async () => (await call('GET', '/_sim/requests')).body.items;

  it('accepts a correctly signed call', async () => {
    expect(await send('POST', '/instances', { body: createBody })).toEqual({ status: 201, body: { name: 'job', machineId: 'gb200-r1-01' } });
    expect(await send('GET', '/instances/job')).toEqual({ status: 200, body: { state: 'present' } });
  });

  it('refuses an unsigned call on every agent route, and on paths it does not serve, without acting on it', async () => {
    expect(await send('POST', '/instances', { body: createBody, keys: null })).toEqual(unauthorized);
    expect(await requestsSeen()).toEqual([]);
    await send('POST', '/instances', { body: createBody });
    expect(await send('GET', '/instances/job', { keys: null })).toEqual(unauthorized);
    expect(await send('DELETE', '/instances/job', { keys: null })).toEqual(unauthorized);
    expect(await send('GET', '/instances/job')).toEqual({ status: 200, body: { state: 'present' } });
    expect(await send('GET', '/no-such-route', { keys: null })).toEqual(unauthorized);
  });

  it('refuses a wrong signature: another body, path or method than signed, or another secret under its key id', async () => {
    const signedFor = (method: string, target: string, body: string) => signRequest(onlyK1, { method, target, body }, new Date());
    const otherBody = JSON.stringify({ name: 'job2', machineId: 'gb200-r1-01', instanceId: 'i-job', clientToken: 'tok-a' });
    expect(await send('POST', '/instances', { body: createBody, headers: signedFor('POST', '/instances', otherBody) })).toEqual(unauthorized);
    expect(await send('DELETE', '/instances/job', { headers: signedFor('DELETE', '/instances/other', '') })).toEqual(unauthorized);
    expect(await send('DELETE', '/instances/job', { headers: signedFor('GET', '/instances/job', '') })).toEqual(unauthorized);
    const forged = { keys: [{ id: k1.id, secret: newKey('x').secret }], current: k1.id };
    expect(await send('POST', '/instances', { body: createBody, keys: forged })).toEqual(unauthorized);
    expect(await requestsSeen()).toEqual([]);
  });

  it('refuses an unknown key id', async () => {
    expect(await send('POST', '/instances', { body: createBody, keys: { keys: [newKey('k9')], current: 'k9' } })).toEqual(unauthorized);
    expect(await requestsSeen()).toEqual([]);
  });

  it(`refuses a timestamp more than ${MAX_CLOCK_SKEW_SECONDS} s away from its clock, either way`, async () => {
    const secondsAgo = (seconds: number) => new Date(Date.now() - seconds * 1000);
    expect(await send('POST', '/instances', { body: createBody, at: secondsAgo(MAX_CLOCK_SKEW_SECONDS + 1) })).toEqual(unauthorized);
    expect(await send('POST', '/instances', { body: createBody, at: secondsAgo(-MAX_CLOCK_SKEW_SECONDS - 2) })).toEqual(unauthorized);
    expect(await requestsSeen()).toEqual([]);
    expect((await send('POST', '/instances', { body: createBody, at: secondsAgo(MAX_CLOCK_SKEW_SECONDS - 5) })).status).toBe(201);
  });

  it('accepts either of two keys during a rotation, and only the new one once the old is removed', async () => {
    const k2 = newKey('k2');
    const signedByK2: SigningKeySet = { keys: [k1, k2], current: k2.id };
    expect(await send('GET', '/instances/job', { keys: signedByK2 })).toEqual(unauthorized);
    expect(await call('POST', '/_sim/keys', k2)).toEqual({ status: 200, body: { keys: [{ id: 'k1' }, { id: 'k2' }] } });
    expect((await send('GET', '/instances/job', { keys: onlyK1 })).status).toBe(404);
    expect((await send('GET', '/instances/job', { keys: signedByK2 })).status).toBe(404);
    expect(await call('DELETE', '/_sim/keys/k1')).toEqual({ status: 200, body: { keys: [{ id: 'k2' }] } });
    expect(await send('GET', '/instances/job', { keys: onlyK1 })).toEqual(unauthorized);
    expect((await send('GET', '/instances/job', { keys: signedByK2 })).status).toBe(404);
  });

  it('takes its /_sim controls unsigned, lists key ids but never secrets, and refuses a key it could not check', async () => {
    const keys = await fetch(`${simUrl}/_sim/keys`);
    expect(keys.status).toBe(200);
    const listed = await keys.text();
    expect(JSON.parse(listed)).toEqual({ keys: [{ id: 'k1' }] });
    expect(listed).not.toContain(k1.secret);
    const short = await call('POST', '/_sim/keys', { id: 'k2', secret: 'short' });
    expect(short.status).toBe(422);
    expect(short.body.errors).toEqual([{ path: 'secret', message: 'a secret is at least 32 characters' }]);
    expect((await call('POST', '/_sim/keys', { id: 'k 2', secret: newKey('k2').secret })).status).toBe(422);
    expect((await call('DELETE', '/_sim/keys/k7')).status).toBe(404);
    expect((await call('PUT', '/_sim/keys')).status).toBe(405);
  });

  it('serves a client through a key rotation: the client reads its keys again after the 401 and goes on with the new key', async () => {
    const k2 = newKey('k2');
    let secret = onlyK1;
    let reads = 0;
    const { client } = agentClient(
      2_000,
      keysReadOnDemand(async () => (reads++, secret)),
    );
    const request = { name: 'job', machineId: 'gb200-r1-01', instanceId: 'i-1', clientToken: 'tok-1' };
    expect(await client.instanceStatus('job')).toEqual({ ok: true, state: 'absent' });
    // 1. the agent accepts the new key beside the old; 2. the secret names it current; 3. the agent drops the old.
    await call('POST', '/_sim/keys', k2);
    secret = { keys: [k1, k2], current: k2.id };
    expect(await client.instanceStatus('job')).toEqual({ ok: true, state: 'absent' });
    await call('DELETE', `/_sim/keys/${k1.id}`);
    expect(reads).toBe(1);
    expect(await client.createInstance(request)).toEqual({ ok: true, siteName: 'job', attempts: 1 });
    expect(reads).toBe(2);
    const creates = (await requestsSeen()).filter((r: { kind: string }) => r.kind === 'create');
    expect(creates.map((r: { name: string; outcome: unknown }) => [r.name, r.outcome])).toEqual([['job', 201]]);
    expect(await client.instanceStatus('job')).toEqual({ ok: true, state: 'present' });
    expect(reads).toBe(2);
  });
});

describe('the agent client against the simulator', () => {
  it('500 then success: the retry is named -r2 and counted', async () => {
    await call('POST', '/_sim/faults', { op: 'create', outcomes: [500] });
    const { client, sleeps } = agentClient();
    const request = { name: 'job', machineId: 'gb200-r1-01', instanceId: 'i-1', clientToken: 'tok-1' };
    expect(await client.createInstance(request)).toEqual({ ok: true, siteName: 'job-r2', attempts: 2 });
    expect(sleeps).toEqual([250]);
    const { body } = await call('GET', '/_sim/requests');
    expect(body.items.map((r: { name: string; outcome: unknown }) => [r.name, r.outcome])).toEqual([
      ['job', 500],
      ['job-r2', 201],
    ]);
  });

  it('network failure then success: the plain name twice', async () => {
    await call('POST', '/_sim/faults', { op: 'create', outcomes: ['network'] });
    const { client } = agentClient();
    const request = { name: 'job', machineId: 'gb200-r1-01', instanceId: 'i-1', clientToken: 'tok-1' };
    expect(await client.createInstance(request)).toEqual({ ok: true, siteName: 'job', attempts: 2 });
    const { body } = await call('GET', '/_sim/requests');
    expect(body.items.map((r: { name: string; outcome: unknown }) => [r.name, r.outcome])).toEqual([
      ['job', 'network'],
      ['job', 201],
    ]);
  });

  it('a held-open create is a timeout and is not retried', async () => {
    await call('POST', '/_sim/faults', { op: 'create', outcomes: ['timeout'] });
    const { client } = agentClient(200);
    const request = { name: 'job', machineId: 'gb200-r1-01', instanceId: 'i-1', clientToken: 'tok-1' };
    const result = await client.createInstance(request);
    expect(result).toMatchObject({ ok: false, attempts: 1, lastOutcome: { kind: 'timeout' } });
    expect((await call('GET', '/_sim/requests')).body.items).toHaveLength(1);
  });

  it('stop() closes a create that is still held open', async () => {
    await call('POST', '/_sim/faults', { op: 'create', outcomes: ['timeout'] });
    const clientTimeoutMs = 10_000;
    const { client } = agentClient(clientTimeoutMs);
    const pending = client.createInstance({ name: 'job', machineId: 'gb200-r1-01', instanceId: 'i-1', clientToken: 't' });
    await eventually(async () => ((await sim.control('GET', '/_sim/requests', undefined))?.body as { items: unknown[] } | undefined)?.items[0]);
    const started = Date.now();
    await sim.stop();
    // Closed by the agent, not ended by the client's own timeout.
    expect(Date.now() - started).toBeLessThan(clientTimeoutMs);
    expect(sim.running()).toBe(false);
    // The agent went away without answering: a network failure to the client, retried against a dead port.
    expect(await pending).toMatchObject({ ok: false, lastOutcome: { kind: 'network' } });
  });

  it('deletes through the client, then reports the cleanup to the controller', async () => {
    const { client } = agentClient();
    await client.createInstance({ name: 'job', machineId: 'gb200-r2-01', instanceId: 'i-1', clientToken: 'tok-1' });
    expect(await client.deleteInstance('job')).toEqual({ ok: true, status: 202, alreadyGone: false });
    const report = await eventually(() => calls.find((c) => c.path.endsWith('/cleanup')));
    expect(report).toEqual({
      path: '/site/v1/machines/gb200-r2-01/cleanup',
      authorization: 'Bearer agent-token',
      body: { ok: true },
    });
    expect(await client.deleteInstance('job')).toEqual({ ok: true, status: 404, alreadyGone: true });
  });
});

describe('simulated site agent: instance status', () => {
  it('answers present, then cleaning until the cleanup is reported, then absent', async () => {
    const { client } = agentClient();
    expect(await client.instanceStatus('job')).toEqual({ ok: true, state: 'absent' });
    await create('job', 'tok-a');
    expect(await client.instanceStatus('job')).toEqual({ ok: true, state: 'present' });

    controllerDown = true;
    refused = 0;
    expect(await client.deleteInstance('job')).toEqual({ ok: true, status: 202, alreadyGone: false });
    await eventually(() => (refused >= 1 ? true : undefined));
    expect(await client.instanceStatus('job')).toEqual({ ok: true, state: 'cleaning' });
    // The same delete again while cleaning: accepted, and no second cleanup.
    expect(await client.deleteInstance('job')).toEqual({ ok: true, status: 202, alreadyGone: false });

    controllerDown = false;
    await eventually(async () => {
      const status = await client.instanceStatus('job');
      return status.ok && status.state === 'absent' ? true : undefined;
    });
    expect(calls.filter((c) => c.path.endsWith('/cleanup'))).toHaveLength(1);
  });

  it("is what the reconcilers' agent (httpSiteAgent) reports: present, cleaning, absent, or an error", async () => {
    const agent = httpSiteAgent(simUrl, defaultSiteConfig(), staticKeys(onlyK1));
    await create('job', 'tok-a');
    expect(await agent.status('job')).toEqual({ kind: 'present' });
    controllerDown = true;
    await agent.delete('job');
    expect(await agent.status('job')).toEqual({ kind: 'cleaning' });
    expect(await agent.status('never-made')).toEqual({ kind: 'absent' });
    const unreachable = httpSiteAgent('http://127.0.0.1:9', defaultSiteConfig(), staticKeys(onlyK1));
    expect(await unreachable.status('job')).toEqual({ kind: 'error', reason: expect.stringContaining('status query') });
  });

  it('rejects a create that breaks the contract, naming the field', async () => {
    const answer = await call('POST', '/instances', { name: 'job', machineId: 'gb200-r1-01', instanceId: 'i-1' });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 'bad_request', message: expect.stringContaining('clientToken') });
  });

  it('answers 400 to a body that is not JSON', async () => {
    const answer = await send('POST', '/instances', { body: '{"name":' });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 'invalid-json' });
  });
});

describe('simulated site agent: state kept in a file', () => {
  const started: SiteSimulator[] = [];
  afterEach(async () => {
    for (const agent of started.splice(0)) await agent.stop();
  });

  async function agentOn(stateFile: string) {
    const agent = simulatorWith({ provisionMs: 0, cleanupMs: 60_000, stateFile });
    started.push(agent);
    await agent.start();
    return createSiteAgentClient({ baseUrl: agent.url, maxAttempts: 1, baseDelayMs: 0, timeoutMs: 2_000, keys: staticKeys(onlyK1) });
  }

  it('outlives a restart: instances stay present, a cleanup under way finished meanwhile without a report, a client token still dedupes', async () => {
    const stateFile = join(mkdtempSync(join(tmpdir(), 'fleetward-agent-')), 'site-agent.json');
    const before = await agentOn(stateFile);
    await before.createInstance({ name: 'kept', machineId: 'gb200-r1-01', instanceId: 'i-kept', clientToken: 'tok-kept' });
    await before.createInstance({ name: 'deleted', machineId: 'gb200-r1-02', instanceId: 'i-deleted', clientToken: 'tok-deleted' });
    expect(await before.deleteInstance('deleted')).toMatchObject({ ok: true, alreadyGone: false });
    expect(await before.instanceStatus('deleted')).toEqual({ ok: true, state: 'cleaning' });
    await started[0]!.stop();

    const after = await agentOn(stateFile);
    expect(await after.instanceStatus('kept')).toEqual({ ok: true, state: 'present' });
    expect(await after.instanceStatus('deleted')).toEqual({ ok: true, state: 'absent' });
    const again = await after.createInstance({ name: 'kept', machineId: 'gb200-r1-01', instanceId: 'i-kept', clientToken: 'tok-kept' });
    expect(again).toMatchObject({ ok: true, siteName: 'kept', attempts: 1 });
    expect(calls.filter((c) => c.path.endsWith('/cleanup'))).toEqual([]);
  });

  it('keeps what its health probes report across a restart', async () => {
    const stateFile = join(mkdtempSync(join(tmpdir(), 'fleetward-agent-')), 'site-agent.json');
    await agentOn(stateFile);
    const alerts = [{ id: 'GpuXid79', message: 'GPU 3 fell off the bus', classifications: ['PreventAllocations'] }];
    expect((await started[0]!.control('POST', '/_sim/machines/gb200-r1-02/health', { alerts }))?.status).toBe(200);
    await started[0]!.stop();

    const restarted = simulatorWith({ provisionMs: 0, cleanupMs: 0, stateFile });
    started.push(restarted);
    expect((await restarted.control('GET', '/_sim/machines/gb200-r1-02/health', undefined))?.body).toEqual({ id: 'gb200-r1-02', alerts });
  });
});

describe('simulated site agent: cleanup reports', () => {
  it('reports a queued cleanup failure', async () => {
    await create('job', 'tok-a');
    await call('POST', '/_sim/faults', { op: 'cleanup', outcomes: [false] });
    expect((await call('DELETE', '/instances/job')).status).toBe(202);
    const report = await eventually(() => calls.find((c) => c.path.endsWith('/cleanup')));
    expect(report.body).toEqual({ ok: false, message: 'simulated cleanup failure' });
  });

  it('retries the report while the controller is unavailable', async () => {
    await create('job', 'tok-a');
    controllerDown = true;
    refused = 0;
    await call('DELETE', '/instances/job');
    await eventually(() => (refused >= 2 ? true : undefined));
    controllerDown = false;
    const report = await eventually(() => calls.find((c) => c.path.endsWith('/cleanup')));
    expect(report.body).toEqual({ ok: true });
  });
});

describe('simulated site agent: heartbeats', () => {
  it('sends the whole roster at once, with the bearer token', async () => {
    const first = await eventually(() => heartbeats()[0]);
    expect(first.authorization).toBe('Bearer agent-token');
    expect(rosterIds(first)).toEqual(machines.map((m) => m.id));
    await eventually(() => (heartbeats().length >= 3 ? true : undefined));
  });

  it('leaves out a stopped machine and brings it back on resume', async () => {
    const stopped = machines[1]!.id;
    expect(await call('POST', `/_sim/machines/${stopped}/heartbeat`, { stopped: true })).toEqual({
      status: 200,
      body: { id: stopped, stopped: true },
    });
    calls = [];
    const without = await eventually(() => heartbeats()[1]);
    expect(rosterIds(without)).toEqual(machines.map((m) => m.id).filter((id) => id !== stopped));

    await call('POST', `/_sim/machines/${stopped}/heartbeat`, { stopped: false });
    calls = [];
    const back = await eventually(() => heartbeats()[1]);
    expect(rosterIds(back)).toEqual(machines.map((m) => m.id));
  });

  it('404s an unknown machine', async () => {
    expect((await call('POST', '/_sim/machines/nope/heartbeat', { stopped: true })).status).toBe(404);
    expect((await call('POST', '/_sim/machines/nope/health', { alerts: [] })).status).toBe(404);
  });

  it("carries a machine's health alerts in every beat until they are cleared", async () => {
    const alerting = machines[2]!.id;
    const alerts = [{ id: 'GpuXid79', message: 'GPU 3 fell off the bus', classifications: ['PreventAllocations'] }];
    expect(await call('POST', `/_sim/machines/${alerting}/health`, { alerts })).toEqual({ status: 200, body: { id: alerting, alerts } });
    calls = [];
    const reported = await eventually(() => heartbeats()[1]);
    expect(reported.body.machines.filter((m: { alerts?: unknown }) => m.alerts)).toEqual([{ id: alerting, alerts }]);
    expect(heartbeatBody.parse(reported.body)).toEqual(reported.body);

    await call('POST', `/_sim/machines/${alerting}/health`, { alerts: [] });
    calls = [];
    const cleared = await eventually(() => heartbeats()[1]);
    expect(cleared.body.machines.every((m: { alerts?: unknown }) => m.alerts === undefined)).toBe(true);
  });

  it('refuses alerts the agent contract does not allow with a 422 problem document', async () => {
    const response = await fetch(`${simUrl}/_sim/machines/${machines[0]!.id}/health`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ alerts: [{ id: '', message: 'x', classifications: ['Sometimes'] }] }),
    });
    expect(response.status).toBe(422);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    const problem = await response.json();
    expect(problem).toMatchObject({ status: 422, code: 'validation-failed' });
    expect(problem.errors.map((e: { path: string }) => e.path).sort()).toEqual(['alerts.0.classifications.0', 'alerts.0.id']);
  });

  it('stops heartbeating when stopped: nothing is left that could send one', async () => {
    await eventually(() => heartbeats()[0]);
    await sim.stop();
    expect(sim.running()).toBe(false);
    // No timer that could fire (the next beat, a provisioning or cleanup delay, a report's retry), no call in flight.
    expect(sim.counters()).toMatchObject({ timersPending: 0, callsInFlight: 0 });
  });
});
