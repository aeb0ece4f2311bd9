// A simulated site agent for the local runner: it creates and sanitizes "machines" on timers, sends the
// controller heartbeats and cleanup reports, and can be told to misbehave through /_sim/* so the create-retry rule
// and the heartbeat timeout can be exercised end to end. Like a real agent it serves only signed calls
// (docs/api.md "Signing"); its /_sim/* controls are test controls and take none.

import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bucketInPart, bucketOf } from '#domain/heartbeat.ts';
import { systemClock, type Clock } from '#domain/model.ts';
import * as z from 'zod';
import { notFound, Rejection } from '#domain/rejection.ts';
import { toProblem, problemContentType } from '#http/problem.ts';
import { fieldErrors, validationFailed } from '#http/validation.ts';
import {
  createInstanceRequest,
  machineAlerts,
  type AgentAlertBody,
  type AgentErrorAnswer,
  type CleanupReport,
  type CreateInstanceRequest,
  type HeartbeatBody,
  type InstanceAnswer,
  type InstanceStatusAnswer,
} from '#site/agent-contract.ts';
import { REQUEST_ID_HEADER } from '#site/agent-client.ts';
import { verifyRequest, type SigningKey } from '#site/request-signing.ts';
import { signingKeyId, signingSecret } from '#site/signing-keys.ts';
import { parseJsonBody, readBodyBytes, readJsonBody, RequestBodyError } from './request-body.ts';

export interface SimulatedMachine {
  id: string;
  machineType: string;
  rack: string;
}

export interface SiteSimulatorOptions {
  machines: SimulatedMachine[];
  /** A function because the controller's port may only be known after the simulator starts. */
  controllerUrl: () => string;
  /** Bearer token with role `site-agent`. */
  token: () => Promise<string>;
  /** The keys it accepts a call signed with (a rotation holds two); `/_sim/keys` adds and removes them later. */
  signingKeys: readonly SigningKey[];
  heartbeatIntervalMs: number;
  /** Send the roster in this many parts a beat, as an agent whose roster outgrows one beat does. Default 1. */
  heartbeatParts?: number;
  provisionMs: number;
  cleanupMs: number;
  log?: (line: string) => void;
  clock?: Clock;
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Delays between attempts at a cleanup report the controller did not take. */
  reportRetryDelaysMs?: number[];
  /**
   * Keep the agent's instances in this file, so that they outlive the runner as a real agent's do (see
   * `loadInstances`). In memory only when absent.
   */
  stateFile?: string;
}

export type CreateFault = number | 'network' | 'timeout';
export type CreateRequestOutcome = number | 'network' | 'timeout';

export interface CreateRequestRecord {
  name: string;
  machineId: string;
  instanceId: string;
  clientToken: string;
  outcome: CreateRequestOutcome;
  at: string;
  /** The controller's `x-request-id`: the API request this create works for. */
  requestId?: string;
}

export interface ControlResponse {
  status: number;
  body?: unknown;
  /** application/json unless said otherwise (a problem document). */
  contentType?: string;
}

/** POST /_sim/machines/{id}/health: what the agent reports for the machine from now on; an empty list clears it. */
export const simHealthBody = z.strictObject({ alerts: machineAlerts });
const simHeartbeatBody = z.strictObject({ stopped: z.boolean() });
/** POST /_sim/keys: a key the agent accepts from now on. */
const simKeyBody = z.strictObject({ id: signingKeyId, secret: signingSecret });
const createFaultStatuses = new Set([400, 404, 409, 422, 429, 500, 501, 502, 503, 504]);
const createFault = z.union([z.literal(['network', 'timeout']), z.number().refine((n) => createFaultStatuses.has(n))], {
  error: `a create outcome is "network", "timeout" or one of ${[...createFaultStatuses].join(', ')}`,
});
const simFaultsBody = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('create'), outcomes: z.array(createFault) }),
  // false = a failed cleanup
  z.strictObject({ op: z.literal('cleanup'), outcomes: z.array(z.boolean()) }),
]);

export interface SiteSimulator {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Base URL of the agent API; known once start() has resolved. */
  readonly url: string;
  running(): boolean;
  /** The /_sim/* routes, for a runner that wants to expose them on its own port. Undefined when not a /_sim route. */
  control(method: string, path: string, body: unknown): Promise<ControlResponse | undefined>;
  /** Same as control() for a node:http request; false when the path is not a /_sim route (nothing was answered). */
  handleControl(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
}

type SimInstance = CreateInstanceRequest;

/**
 * The demo fleet: ids like `gb200-r1-01` (type, rack, number in the rack). Racks are numbered across all groups so
 * that a rack holds one machine type, as real GPU racks do, and ids stay unique and stable for a given config.
 */
export function demoFleet(groups: Array<{ type: string; count: number; racks: number }>): SimulatedMachine[] {
  const machines: SimulatedMachine[] = [];
  let rackOffset = 0;
  for (const group of groups) {
    const racks = Math.max(1, Math.min(group.racks, group.count));
    const perRack = Math.ceil(group.count / racks);
    const width = Math.max(2, String(perRack).length);
    const inRack = new Array<number>(racks).fill(0);
    for (let i = 0; i < group.count; i++) {
      // Contiguous blocks whose sizes differ by at most one.
      const rack = Math.floor((i * racks) / group.count);
      inRack[rack] = (inRack[rack] ?? 0) + 1;
      const rackNumber = rackOffset + rack + 1;
      machines.push({
        id: `${group.type}-r${rackNumber}-${String(inRack[rack]).padStart(width, '0')}`,
        machineType: group.type,
        rack: `rack-${rackNumber}`,
      });
    }
    rackOffset += racks;
  }
  return machines;
}

export function createSiteSimulator(options: SiteSimulatorOptions): SiteSimulator {
  const clock = options.clock ?? systemClock;
  const log = options.log ?? (() => {});
  const reportRetryDelaysMs = options.reportRetryDelaysMs ?? [500, 1000, 2000, 4000];
  const machineIds = new Set(options.machines.map((m) => m.id));

  const instances = new Map<string, SimInstance>();
  // Deleted and not yet reported clean: the agent still answers for them (GET says cleaning, DELETE is a no-op).
  const cleaning = new Map<string, SimInstance>();
  const nameByToken = new Map<string, string>();
  // What the agent's health probes report, by machine: sent with every heartbeat until changed.
  const health = new Map<string, AgentAlertBody[]>();
  const saved = options.stateFile ? loadState(options.stateFile) : undefined;
  for (const [id, alerts] of Object.entries(saved?.health ?? {})) if (machineIds.has(id)) health.set(id, alerts);
  for (const instance of saved?.instances ?? []) register(instance);
  const requests: CreateRequestRecord[] = [];
  const createFaults: CreateFault[] = [];
  const cleanupFaults: boolean[] = [];
  const stoppedHeartbeats = new Set<string>();
  const acceptedKeys = new Map(options.signingKeys.map((key) => [key.id, key]));

  const timers = new Set<NodeJS.Timeout>();
  const heldOpen = new Set<ServerResponse>();
  let outbound = new AbortController();
  let server: Server | undefined;
  let baseUrl: string | undefined;
  let isRunning = false;
  let heartbeatLoop: Promise<void> | undefined;

  /** setTimeout that stop() cancels; resolves false when cancelled. */
  function wait(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      if (!isRunning) return resolve(false);
      const signal = outbound.signal;
      const timer = setTimeout(() => {
        timers.delete(timer);
        signal.removeEventListener('abort', onAbort);
        resolve(true);
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        timers.delete(timer);
        resolve(false);
      };
      timers.add(timer);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  async function postToController(path: string, body: unknown): Promise<Response> {
    const token = await options.token();
    return fetch(`${options.controllerUrl().replace(/\/+$/, '')}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
      signal: AbortSignal.any([outbound.signal, AbortSignal.timeout(10_000)]),
    });
  }

  async function sendHeartbeat(): Promise<void> {
    const machines = options.machines
      .filter((m) => !stoppedHeartbeats.has(m.id))
      .map((m) => (health.has(m.id) ? { id: m.id, alerts: health.get(m.id)! } : { id: m.id }));
    const count = options.heartbeatParts ?? 1;
    if (count === 1) return sendBeat({ machines });
    for (let index = 0; index < count; index++) {
      const part = { index, count };
      await sendBeat({ machines: machines.filter((m) => bucketInPart(bucketOf(m.id), part)), part: part as HeartbeatBody['part'] });
    }
  }

  async function sendBeat(body: HeartbeatBody): Promise<void> {
    try {
      const response = await postToController('/site/v1/heartbeats', body);
      await response.body?.cancel();
      if (!response.ok) log(`site-sim: heartbeat answered ${response.status}`);
    } catch (error) {
      if (isRunning) log(`site-sim: heartbeat failed: ${errorText(error)}`);
    }
  }

  // Sequential on purpose: the controller treats each heartbeat as the whole roster (or part), so two must never race.
  async function runHeartbeats(): Promise<void> {
    do {
      await sendHeartbeat();
    } while (await wait(options.heartbeatIntervalMs));
  }

  async function reportCleanup(instance: SimInstance, report: CleanupReport): Promise<void> {
    const path = `/site/v1/machines/${encodeURIComponent(instance.machineId)}/cleanup`;
    for (let attempt = 0; ; attempt++) {
      if (!isRunning) return;
      try {
        const response = await postToController(path, report);
        await response.body?.cancel();
        if (response.ok) {
          log(`site-sim: reported cleanup of ${instance.machineId} (${instance.name}): ok=${report.ok}`);
          return;
        }
        // A 4xx will not heal by asking again; only an unwell controller is worth retrying.
        if (response.status < 500) {
          log(`site-sim: controller refused the cleanup report for ${instance.machineId}: ${response.status}`);
          return;
        }
        log(`site-sim: cleanup report for ${instance.machineId} answered ${response.status}`);
      } catch (error) {
        if (!isRunning) return;
        log(`site-sim: cleanup report for ${instance.machineId} failed: ${errorText(error)}`);
      }
      const delay = reportRetryDelaysMs[attempt];
      if (delay === undefined) {
        log(`site-sim: giving up on the cleanup report for ${instance.machineId}`);
        return;
      }
      if (!(await wait(delay))) return;
    }
  }

  async function handleCreate(req: IncomingMessage, body: Buffer, res: ServerResponse): Promise<void> {
    const parsed = createInstanceRequest.safeParse(parseJsonBody(body.toString('utf8')));
    if (!parsed.success) {
      const message = parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ');
      return sendError(res, 400, { code: 'bad_request', message });
    }
    const request = parsed.data;
    const requestId = req.headers[REQUEST_ID_HEADER];
    const record = (outcome: CreateRequestOutcome) =>
      requests.push({ ...request, outcome, at: clock.now().toISOString(), ...(typeof requestId === 'string' ? { requestId } : {}) });
    const fault = createFaults.shift();

    if (fault === 'network') {
      record('network');
      req.socket.destroy();
      return;
    }
    if (fault === 'timeout') {
      record('timeout');
      heldOpen.add(res);
      res.on('close', () => heldOpen.delete(res));
      return;
    }
    if (fault !== undefined) {
      record(fault);
      // A gateway error may come after the create committed; keeping the name mimics that residue.
      if ((fault === 502 || fault === 504) && !instances.has(request.name)) register(request);
      const code = fault === 409 ? 'name_conflict' : 'simulated_fault';
      return sendError(res, fault, { code, message: `simulated ${fault}` });
    }

    const existing = lookupByToken(request.clientToken);
    if (existing) {
      record(201);
      if (!(await wait(options.provisionMs))) return void res.destroy();
      return sendAnswer(res, 201, existing);
    }
    if (instances.has(request.name)) {
      record(409);
      return sendError(res, 409, { code: 'name_conflict', message: `an instance named ${request.name} exists` });
    }
    // Registered before provisioning so a concurrent duplicate already sees it.
    register(request);
    record(201);
    if (!(await wait(options.provisionMs))) return void res.destroy();
    log(`site-sim: created ${request.name} on ${request.machineId}`);
    sendAnswer(res, 201, request);
  }

  function register(instance: SimInstance): void {
    instances.set(instance.name, instance);
    nameByToken.set(instance.clientToken, instance.name);
    saveState();
  }

  /** Written whole and renamed into place, so a runner killed mid-write leaves the previous state, never half of one. */
  function saveState(): void {
    if (!options.stateFile) return;
    const state: SavedState = { instances: [...instances.values()], cleaning: [...cleaning.values()], health: Object.fromEntries(health) };
    writeFileSync(`${options.stateFile}.tmp`, JSON.stringify(state));
    renameSync(`${options.stateFile}.tmp`, options.stateFile);
  }

  function lookupByToken(clientToken: string): SimInstance | undefined {
    const name = nameByToken.get(clientToken);
    return name === undefined ? undefined : instances.get(name);
  }

  function handleDelete(name: string, res: ServerResponse): void {
    const instance = instances.get(name);
    if (!instance) {
      // Deleting again while the first delete is still cleaning is the same delete.
      const inCleanup = cleaning.get(name);
      if (inCleanup) sendAnswer(res, 202, inCleanup);
      else sendError(res, 404, { code: 'not_found', message: `no instance named ${name}` });
      return;
    }
    instances.delete(name);
    if (nameByToken.get(instance.clientToken) === name) nameByToken.delete(instance.clientToken);
    cleaning.set(name, instance);
    saveState();
    const fails = cleanupFaults.shift() === false;
    sendAnswer(res, 202, instance);
    void (async () => {
      if (!(await wait(options.cleanupMs))) return;
      await reportCleanup(instance, fails ? { ok: false, message: 'simulated cleanup failure' } : { ok: true });
      if (cleaning.get(name) === instance) cleaning.delete(name);
      saveState();
    })();
  }

  function handleStatus(name: string, res: ServerResponse): void {
    // A name that was deleted and created again is the new, present instance.
    const state: InstanceStatusAnswer['state'] | undefined = instances.has(name) ? 'present' : cleaning.has(name) ? 'cleaning' : undefined;
    if (state) sendJson(res, 200, { state } satisfies InstanceStatusAnswer);
    else sendError(res, 404, { code: 'not_found', message: `no instance named ${name}` });
  }

  async function control(method: string, path: string, body: unknown): Promise<ControlResponse | undefined> {
    if (path === '/_sim/faults') {
      if (method === 'DELETE') {
        createFaults.length = 0;
        cleanupFaults.length = 0;
        return { status: 204 };
      }
      if (method === 'GET') return { status: 200, body: { create: [...createFaults], cleanup: [...cleanupFaults] } };
      if (method !== 'POST') return methodNotAllowed();
      return queueFaults(body);
    }
    if (path === '/_sim/requests') {
      if (method === 'GET') return { status: 200, body: { items: requests.map((r) => ({ ...r })) } };
      if (method === 'DELETE') {
        requests.length = 0;
        return { status: 204 };
      }
      return methodNotAllowed();
    }
    const heartbeat = /^\/_sim\/machines\/([^/]+)\/heartbeat$/.exec(path);
    if (heartbeat) {
      if (method !== 'POST') return methodNotAllowed();
      const id = decodeURIComponent(heartbeat[1] ?? '');
      if (!machineIds.has(id)) return problem(notFound(`machine ${id}`));
      const parsed = simHeartbeatBody.safeParse(body);
      if (!parsed.success) return invalidBody(parsed.error);
      const { stopped } = parsed.data;
      if (stopped) stoppedHeartbeats.add(id);
      else stoppedHeartbeats.delete(id);
      log(`site-sim: heartbeats of ${id} ${stopped ? 'stopped' : 'resumed'}`);
      return { status: 200, body: { id, stopped } };
    }
    const probes = /^\/_sim\/machines\/([^/]+)\/health$/.exec(path);
    if (probes) return healthControl(method, decodeURIComponent(probes[1] ?? ''), body);
    if (path === '/_sim/keys') return keysControl(method, body);
    const oneKey = /^\/_sim\/keys\/([^/]+)$/.exec(path);
    if (oneKey) return removeKeyControl(method, decodeURIComponent(oneKey[1] ?? ''));
    if (path === '/_sim' || path.startsWith('/_sim/')) return problem(notFound(`simulator control ${path}`));
    return undefined;
  }

  function healthControl(method: string, id: string, body: unknown): ControlResponse {
    if (method !== 'POST' && method !== 'GET') return methodNotAllowed();
    if (!machineIds.has(id)) return problem(notFound(`machine ${id}`));
    if (method === 'GET') return { status: 200, body: { id, alerts: health.get(id) ?? [] } };
    const parsed = simHealthBody.safeParse(body);
    if (!parsed.success) return invalidBody(parsed.error);
    const { alerts } = parsed.data;
    if (alerts.length === 0) health.delete(id);
    else health.set(id, alerts);
    saveState();
    log(`site-sim: health of ${id}: ${alerts.length === 0 ? 'clear' : alerts.map((a) => a.id).join(', ')}`);
    return { status: 200, body: { id, alerts } };
  }

  const keyIds = () => ({ keys: [...acceptedKeys.keys()].map((id) => ({ id })) });

  /** GET lists the ids of the keys it accepts (never their secrets); POST adds one, or replaces the key of that id. */
  function keysControl(method: string, body: unknown): ControlResponse {
    if (method === 'GET') return { status: 200, body: keyIds() };
    if (method !== 'POST') return methodNotAllowed();
    const parsed = simKeyBody.safeParse(body);
    if (!parsed.success) return invalidBody(parsed.error);
    acceptedKeys.set(parsed.data.id, parsed.data);
    log(`site-sim: accepts signing key ${parsed.data.id}`);
    return { status: 200, body: keyIds() };
  }

  function removeKeyControl(method: string, id: string): ControlResponse {
    if (method !== 'DELETE') return methodNotAllowed();
    if (!acceptedKeys.delete(id)) return problem(notFound(`signing key ${id}`));
    log(`site-sim: no longer accepts signing key ${id}`);
    return { status: 200, body: keyIds() };
  }

  function queueFaults(body: unknown): ControlResponse {
    const parsed = simFaultsBody.safeParse(body);
    if (!parsed.success) return invalidBody(parsed.error);
    const request = parsed.data;
    if (request.op === 'create') createFaults.push(...request.outcomes);
    else cleanupFaults.push(...request.outcomes);
    return { status: 200, body: { op: request.op, queued: request.op === 'create' ? [...createFaults] : [...cleanupFaults] } };
  }

  async function handleControl(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const path = new URL(req.url ?? '/', 'http://sim').pathname;
    if (path !== '/_sim' && !path.startsWith('/_sim/')) return false;
    const body = req.method === 'POST' ? await readJsonBody(req) : undefined;
    const answer = (await control(req.method ?? 'GET', path, body)) ?? problem(notFound(`simulator control ${path}`));
    sendJson(res, answer.status, answer.body, answer.contentType);
    return true;
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (await handleControl(req, res)) return;
    // Every agent route, and any other path, answers only a signed call: an unsigned caller learns nothing, not even
    // which paths exist. The target is checked as it came in the request line, the body as the bytes that came.
    const target = req.url ?? '/';
    const body = await readBodyBytes(req);
    const verdict = verifyRequest([...acceptedKeys.values()], { method: req.method ?? 'GET', target, body, headers: req.headers }, clock.now());
    if (!verdict.ok) {
      log(`site-sim: refused ${req.method} ${target}: ${verdict.reason}`);
      return sendJson(res, 401, { error: 'unauthorized' });
    }
    const path = new URL(target, 'http://sim').pathname;
    const requestId = req.headers[REQUEST_ID_HEADER];
    if (typeof requestId === 'string') log(`site-sim: ${req.method} ${path} for request ${requestId}`);
    if (path === '/instances') {
      if (req.method === 'POST') return handleCreate(req, body, res);
      return sendJson(res, 405, { code: 'method_not_allowed' });
    }
    const named = /^\/instances\/([^/]+)$/.exec(path);
    if (named) {
      const name = decodeURIComponent(named[1] ?? '');
      if (req.method === 'DELETE') return handleDelete(name, res);
      if (req.method === 'GET') return handleStatus(name, res);
      return sendJson(res, 405, { code: 'method_not_allowed' });
    }
    sendJson(res, 404, { code: 'not_found', message: path });
  }

  return {
    get url() {
      if (!baseUrl) throw new Error('site simulator: url is known once start() has resolved');
      return baseUrl;
    },
    running: () => isRunning,
    control,
    handleControl,

    async start() {
      if (isRunning) return;
      outbound = new AbortController();
      const srv = createServer((req, res) => {
        route(req, res).catch((error: unknown) => {
          if (error instanceof RequestBodyError) return sendJson(res, error.status, { code: error.code, message: error.message });
          log(`site-sim: ${req.method} ${req.url} failed: ${errorText(error)}`);
          if (!res.headersSent) sendJson(res, 500, { code: 'internal', message: errorText(error) });
          else res.destroy();
        });
      });
      await new Promise<void>((resolve, reject) => {
        srv.once('error', reject);
        srv.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
          srv.off('error', reject);
          resolve();
        });
      });
      server = srv;
      const { address, port } = srv.address() as AddressInfo;
      baseUrl = `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
      isRunning = true;
      log(`site-sim: agent listening on ${baseUrl} with ${options.machines.length} machines`);
      heartbeatLoop = runHeartbeats();
    },

    async stop() {
      if (!server) return;
      isRunning = false;
      outbound.abort();
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const res of heldOpen) res.destroy();
      heldOpen.clear();
      const srv = server;
      server = undefined;
      const closed = new Promise<void>((resolve) => srv.close(() => resolve()));
      srv.closeAllConnections();
      await closed;
      await heartbeatLoop;
      heartbeatLoop = undefined;
    },
  };
}

interface SavedState {
  instances: SimInstance[];
  cleaning: SimInstance[];
  /** Absent in a file an older agent wrote. */
  health?: Record<string, AgentAlertBody[]>;
}

/**
 * What a previous run of the agent left: its instances and what its health probes report. A real agent is its own
 * process and lives through a crash of the controller: the cleanups it had under way finished meanwhile, and their
 * reports, posted to a controller that was down, were lost. So those instances are simply gone now, and the
 * controller has to ask (GET) to find out.
 */
function loadState(stateFile: string): { instances: SimInstance[]; health: Record<string, AgentAlertBody[]> } {
  let text: string;
  try {
    text = readFileSync(stateFile, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { instances: [], health: {} };
    throw error;
  }
  const state = JSON.parse(text) as SavedState;
  return {
    instances: state.instances.map((instance) => createInstanceRequest.parse(instance)),
    health: Object.fromEntries(Object.entries(state.health ?? {}).map(([id, alerts]) => [id, machineAlerts.parse(alerts)])),
  };
}

function sendJson(res: ServerResponse, status: number, body?: unknown, contentType = 'application/json'): void {
  if (res.headersSent || res.destroyed) return;
  if (body === undefined || status === 204) {
    res.writeHead(status).end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) }).end(text);
}

function sendAnswer(res: ServerResponse, status: 201 | 202, instance: SimInstance): void {
  sendJson(res, status, { name: instance.name, machineId: instance.machineId } satisfies InstanceAnswer);
}

function sendError(res: ServerResponse, status: number, body: AgentErrorAnswer): void {
  sendJson(res, status, body);
}

function methodNotAllowed(): ControlResponse {
  return problem(new Rejection(405, 'method-not-allowed', 'this simulator control does not take that method'));
}

/** The simulator's controls answer errors as the site's API does: problem+json. */
const problem = (rejection: Rejection): ControlResponse => ({ status: rejection.status, contentType: problemContentType, body: toProblem(rejection) });
const invalidBody = (error: z.ZodError): ControlResponse => problem(validationFailed(fieldErrors(error.issues, 'body')));

function errorText(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  const message = error instanceof Error ? error.message : String(error);
  return typeof cause?.code === 'string' ? `${message} (${cause.code})` : message;
}
