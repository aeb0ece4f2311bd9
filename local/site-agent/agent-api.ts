// The simulated agent's own API, the routes the controller calls (docs/api.md "Site agent"): POST /instances,
// DELETE and GET /instances/{name}, POST /instances/{name}/power, POST /machines/{id}/validation and
// POST /machines/{id}/maintenance. Like a real agent it serves only signed calls (docs/api.md "Signing"), and plays
// the faults the /_sim controls queued.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '#domain/core/model.ts';
import { REQUEST_ID_HEADER } from '#site/agent-client.ts';
import {
  createInstanceRequest,
  powerRequest,
  startMaintenanceRequest,
  validationRequest,
  type AgentErrorAnswer,
  type InstanceAnswer,
  type InstanceStatusAnswer,
} from '#site/agent-contract.ts';
import { verifyRequest } from '#site/request-signing.ts';
import { parseJsonBody, readBodyBytes } from '../request-body.ts';
import type { AgentLoops } from './agent-loops.ts';
import type { AgentInstance, AgentState } from './agent-state.ts';
import type { AgentBehaviour, CreateRequestOutcome } from './sim-controls.ts';
import { sendJson } from './wire.ts';

export interface AgentApiOptions {
  state: AgentState;
  behaviour: AgentBehaviour;
  loops: Pick<AgentLoops, 'wait' | 'cleanUp' | 'maintain' | 'validate'>;
  provisionMs: number;
  /** How long a validation runs before the agent reports it (unless the machine's next result says otherwise). */
  validationMs: number;
  clock: Clock;
  log: (line: string) => void;
}

export interface AgentApi {
  /** Answers one call (any path: an unsigned or unknown one gets 401 or 404). */
  serve(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Ends the creates held open by a `timeout` fault. */
  closeHeldOpen(): void;
}

/** The tests every suite runs here: a real agent runs DCGM diagnostics, NCCL and fabric checks. */
export const SIMULATED_SUITE_TESTS = ['dcgm-diag', 'nccl-all-reduce', 'nvlink-bandwidth'] as const;

export function createAgentApi({ state, behaviour, loops, provisionMs, validationMs, clock, log }: AgentApiOptions): AgentApi {
  const heldOpen = new Set<ServerResponse>();

  async function handleCreate(req: IncomingMessage, body: Buffer, res: ServerResponse): Promise<void> {
    const parsed = createInstanceRequest.safeParse(parseJsonBody(body.toString('utf8')));
    if (!parsed.success) {
      const message = parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ');
      sendError(res, 400, { code: 'bad_request', message });
      return;
    }
    const request = parsed.data;
    const requestId = req.headers[REQUEST_ID_HEADER];
    const record = (outcome: CreateRequestOutcome) =>
      behaviour.requestLog.push({
        kind: 'create',
        ...request,
        outcome,
        at: clock.now().toISOString(),
        ...(typeof requestId === 'string' ? { requestId } : {}),
      });
    const fault = behaviour.createFaults.shift();

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
      if ((fault === 502 || fault === 504) && !state.has(request.name)) state.register(request);
      const code = fault === 409 ? 'name_conflict' : 'simulated_fault';
      sendError(res, fault, { code, message: `simulated ${fault}` });
      return;
    }

    const existing = state.byClientToken(request.clientToken);
    if (existing) {
      record(201);
      if (!(await loops.wait(provisionMs))) return void res.destroy();
      sendAnswer(res, 201, existing);
      return;
    }
    if (state.has(request.name)) {
      record(409);
      sendError(res, 409, { code: 'name_conflict', message: `an instance named ${request.name} exists` });
      return;
    }
    // Registered before provisioning so a concurrent duplicate already sees it.
    state.register(request);
    record(201);
    if (!(await loops.wait(provisionMs))) return void res.destroy();
    log(`site-sim: created ${request.name} on ${request.machineId}`);
    sendAnswer(res, 201, request);
  }

  function handleDelete(name: string, res: ServerResponse): void {
    const instance = state.startCleanup(name);
    if (!instance) {
      // Deleting again while the first delete is still cleaning is the same delete.
      const inCleanup = state.cleaning(name);
      if (inCleanup) {
        sendAnswer(res, 202, inCleanup);
        return;
      }
      sendError(res, 404, { code: 'not_found', message: `no instance named ${name}` });
      return;
    }
    const fails = behaviour.cleanupFaults.shift() === false;
    sendAnswer(res, 202, instance);
    loops.cleanUp(instance, fails ? { ok: false, message: 'simulated cleanup failure' } : { ok: true }, () => state.endCleanup(name, instance));
  }

  /** Accepts the work (202) and reports it done later, unless a queued fault answers instead (as for a create). */
  function handleMaintenance(req: IncomingMessage, machineId: string, body: Buffer, res: ServerResponse): void {
    const parsed = startMaintenanceRequest.safeParse(parseJsonBody(body.toString('utf8')));
    if (!parsed.success) {
      sendError(res, 400, { code: 'bad_request', message: parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ') });
      return;
    }
    const fault = behaviour.maintenanceFaults.shift();
    if (fault === 'network') return void req.socket.destroy();
    if (fault === 'timeout') {
      heldOpen.add(res);
      res.on('close', () => heldOpen.delete(res));
      return;
    }
    if (fault !== undefined) {
      sendError(res, fault, { code: 'simulated_fault', message: `simulated ${fault}` });
      return;
    }
    sendJson(res, 202, { machineId, maintenanceId: parsed.data.maintenanceId });
    log(`site-sim: maintenance ${parsed.data.maintenanceId} (${parsed.data.category}) on ${machineId}`);
    loops.maintain(machineId, parsed.data.maintenanceId);
  }

  /** Accepts at once (202), runs the suite for `validationMs`, then reports; the machine's queued result decides how. */
  function handleValidation(machineId: string, body: Buffer, res: ServerResponse): void {
    const parsed = validationRequest.safeParse(parseJsonBody(body.toString('utf8')));
    if (!parsed.success) {
      sendError(res, 400, { code: 'bad_request', message: parsed.error.issues.map((i) => i.message).join('; ') });
      return;
    }
    const request = parsed.data;
    const next = behaviour.validationOutcomes.get(machineId) ?? { outcome: 'pass' as const };
    behaviour.validationOutcomes.delete(machineId);
    behaviour.requestLog.push({ kind: 'validation', machineId, ...request, outcome: next.outcome, at: clock.now().toISOString() });
    sendJson(res, 202, { validationId: request.validationId });
    if (next.outcome === 'never') return;
    const failing = new Set(next.outcome === 'fail' ? (next.failing?.length ? next.failing : [SIMULATED_SUITE_TESTS[0]]) : []);
    const tests = [...new Set([...SIMULATED_SUITE_TESTS, ...failing])];
    const results = tests.map((test) => (failing.has(test) ? { test, passed: false, message: `simulated failure of ${test}` } : { test, passed: true }));
    loops.validate(machineId, { validationId: request.validationId, passed: failing.size === 0, results }, next.delayMs ?? validationMs);
  }

  /** Power actions on an instance the agent holds: recorded, and answered as the queued power faults say. */
  function handlePower(name: string, body: Buffer, req: IncomingMessage, res: ServerResponse): void {
    const parsed = powerRequest.safeParse(parseJsonBody(body.toString('utf8')));
    if (!parsed.success) {
      sendError(res, 400, { code: 'bad_request', message: parsed.error.issues.map((i) => i.message).join('; ') });
      return;
    }
    const fault = behaviour.powerFaults.shift();
    const requestId = req.headers[REQUEST_ID_HEADER];
    const outcome: CreateRequestOutcome = fault ?? (state.statusOf(name) === 'present' ? 202 : 404);
    behaviour.requestLog.push({
      kind: 'power',
      name,
      action: parsed.data.action,
      outcome,
      at: clock.now().toISOString(),
      ...(typeof requestId === 'string' ? { requestId } : {}),
    });
    if (outcome === 'network') return void req.socket.destroy();
    if (outcome === 'timeout') {
      heldOpen.add(res);
      res.on('close', () => heldOpen.delete(res));
      return;
    }
    if (outcome === 404) {
      sendError(res, 404, { code: 'not_found', message: `no instance named ${name}` });
      return;
    }
    if (outcome !== 202) {
      sendError(res, outcome, { code: 'simulated_fault', message: `simulated ${outcome}` });
      return;
    }
    log(`site-sim: power ${parsed.data.action} of ${name}`);
    sendJson(res, 202, { name, action: parsed.data.action });
  }

  function handleStatus(name: string, res: ServerResponse): void {
    const status = state.statusOf(name);
    if (!status) {
      sendError(res, 404, { code: 'not_found', message: `no instance named ${name}` });
      return;
    }
    sendJson(res, 200, { state: status } satisfies InstanceStatusAnswer);
  }

  return {
    async serve(req, res) {
      // Every agent route, and any other path, answers only a signed call: an unsigned caller learns nothing, not
      // even which paths exist. The target is checked as it came in the request line, the body as the bytes that came.
      const target = req.url ?? '/';
      const body = await readBodyBytes(req);
      const verdict = verifyRequest([...behaviour.acceptedKeys.values()], { method: req.method ?? 'GET', target, body, headers: req.headers }, clock.now());
      if (!verdict.ok) {
        log(`site-sim: refused ${req.method} ${target}: ${verdict.reason}`);
        sendJson(res, 401, { error: 'unauthorized' });
        return;
      }
      const path = new URL(target, 'http://sim').pathname;
      const requestId = req.headers[REQUEST_ID_HEADER];
      if (typeof requestId === 'string') log(`site-sim: ${req.method} ${path} for request ${requestId}`);
      if (path === '/instances') {
        if (req.method === 'POST') return handleCreate(req, body, res);
        sendJson(res, 405, { code: 'method_not_allowed' });
        return;
      }
      const at = clock.now().toISOString();
      const named = /^\/instances\/([^/]+)$/.exec(path);
      if (named) {
        const name = decodeURIComponent(named[1] ?? '');
        const seen = { name, at, ...(typeof requestId === 'string' ? { requestId } : {}) };
        if (req.method === 'DELETE') {
          behaviour.requestLog.push({ kind: 'delete', ...seen });
          return handleDelete(name, res);
        }
        if (req.method === 'GET') {
          behaviour.requestLog.push({ kind: 'status', ...seen });
          return handleStatus(name, res);
        }
        sendJson(res, 405, { code: 'method_not_allowed' });
        return;
      }
      const power = /^\/instances\/([^/]+)\/power$/.exec(path);
      if (power) {
        if (req.method === 'POST') return handlePower(decodeURIComponent(power[1] ?? ''), body, req, res);
        sendJson(res, 405, { code: 'method_not_allowed' });
        return;
      }
      const validation = /^\/machines\/([^/]+)\/validation$/.exec(path);
      if (validation) {
        if (req.method === 'POST') return handleValidation(decodeURIComponent(validation[1] ?? ''), body, res);
        sendJson(res, 405, { code: 'method_not_allowed' });
        return;
      }
      const maintenance = /^\/machines\/([^/]+)\/maintenance$/.exec(path);
      if (maintenance && req.method === 'POST') return handleMaintenance(req, decodeURIComponent(maintenance[1] ?? ''), body, res);
      sendJson(res, 404, { code: 'not_found', message: path });
    },

    closeHeldOpen() {
      for (const res of heldOpen) res.destroy();
      heldOpen.clear();
    },
  };
}

function sendAnswer(res: ServerResponse, status: 201 | 202, instance: AgentInstance): void {
  sendJson(res, status, { name: instance.name, machineId: instance.machineId } satisfies InstanceAnswer);
}

function sendError(res: ServerResponse, status: number, body: AgentErrorAnswer): void {
  sendJson(res, status, body);
}
