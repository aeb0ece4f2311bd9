import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { createSiteAgentClient } from '#site/agent-client.ts';
import { signRequest, type SigningKey, type SigningKeySet } from '#site/request-signing.ts';
import { staticKeys } from '#site/signing-keys.ts';
import { demoFleet } from '#local/site-agent/demo-fleet.ts';
import { CONTROLLER_CALL_TIMEOUT_MS } from '#local/site-agent/agent-loops.ts';
import { createSiteSimulator, type SiteSimulator, type SiteSimulatorOptions } from '#local/site-agent/simulator.ts';

// What the simulated site agent's tests share: a stub controller that records what the agent sends it, an agent per
// test, and requests signed as the controller signs them.

// The controller is not under test here: a stub records what the simulated agent sends it.
export interface ControllerCall {
  path: string;
  authorization: string | undefined;
  body: any;
}

let controller: Server;
export let controllerUrl: string;
export let calls: ControllerCall[] = [];
export let controllerDown = false;
// Cleanup reports turned away while the controller is down.
export let refused = 0;

export const machines = demoFleet([{ type: 'gb200', count: 4, racks: 2 }]);
export const newKey = (id: string): SigningKey => ({ id, secret: randomBytes(32).toString('hex') });
// The key the agent of each test starts with, as the local runner makes one per run.
export const k1 = newKey('k1');
export const onlyK1: SigningKeySet = { keys: [k1], current: k1.id };
export let sim: SiteSimulator;
export let simUrl: string;

// The agent of each test, and from its timings the longest it may take to do what a test waits for: the next beat
// or two, a create's provisioning, a cleanup with every retry of its report, and one call the controller may leave
// unanswered until the agent gives up on it.
export const HEARTBEAT_INTERVAL_MS = 50;
export const PROVISION_MS = 20;
export const CLEANUP_MS = 20;
export const REPORT_RETRY_DELAYS_MS = [30, 30, 30];
export const AGENT_ACTS_WITHIN_MS =
  2 * HEARTBEAT_INTERVAL_MS + PROVISION_MS + CLEANUP_MS + REPORT_RETRY_DELAYS_MS.reduce((a, b) => a + b, 0) + CONTROLLER_CALL_TIMEOUT_MS;

/** An agent of the fleet above that reports to the stub controller, with these options changed. */
export const simulatorWith = (options: Partial<SiteSimulatorOptions> = {}): SiteSimulator =>
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

/** Starts the stub controller for the file, and a fresh agent of the fleet above for each test. */
export function useSimulatorHarness(): void {
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
}

export interface Sent {
  body?: string;
  /** Signed with these keys' current one (null: not signed at all). */
  keys?: SigningKeySet | null;
  /** When it was signed. */
  at?: Date;
  /** Sent over the signature's own headers: a test's forgery. */
  headers?: Record<string, string>;
}

/** A request to the agent as the controller sends one: signed by default, over exactly the bytes that go. */
export async function send(method: string, path: string, sent: Sent = {}) {
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

export const call = (method: string, path: string, body?: unknown) => send(method, path, body === undefined ? {} : { body: JSON.stringify(body) });

export const create = (name: string, clientToken: string, machineId = 'gb200-r1-01') =>
  call('POST', '/instances', { name, machineId, instanceId: `i-${name}`, clientToken });

export async function eventually<T>(probe: () => T | undefined | Promise<T | undefined>, timeoutMs = AGENT_ACTS_WITHIN_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export const heartbeats = () => calls.filter((c) => c.path === '/site/v1/heartbeats');
export const rosterIds = (call: ControllerCall) => call.body.machines.map((m: { id: string }) => m.id);

export function agentClient(timeoutMs = 2_000, keys = staticKeys(onlyK1)) {
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

/** What a test changes of the stub controller and the agent under test. */
export const setControllerDown = (down: boolean) => {
  controllerDown = down;
};
export const resetRefused = () => {
  refused = 0;
};
export const clearCalls = () => {
  calls = [];
};
export const setSimUrl = (url: string) => {
  simUrl = url;
};
