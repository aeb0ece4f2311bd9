// The simulated agent's own API, the routes the controller calls (docs/api.md "Site agent"): POST /instances,
// DELETE and GET /instances/{name}, POST /machines/{id}/maintenance. Like a real agent it serves only signed calls (docs/api.md "Signing"), and plays
// the faults the /_sim controls queued.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '#domain/model.ts';
import { REQUEST_ID_HEADER } from '#site/agent-client.ts';
import { createInstanceRequest, startMaintenanceRequest, type AgentErrorAnswer, type InstanceAnswer, type InstanceStatusAnswer } from '#site/agent-contract.ts';
import { verifyRequest } from '#site/request-signing.ts';
import { parseJsonBody, readBodyBytes } from '../request-body.ts';
import type { AgentLoops } from './agent-loops.ts';
import type { AgentInstance, AgentState } from './agent-state.ts';
import type { AgentBehaviour, CreateRequestOutcome } from './sim-controls.ts';
import { sendJson } from './wire.ts';

export interface AgentApiOptions {
  state: AgentState;
  behaviour: AgentBehaviour;
  loops: Pick<AgentLoops, 'wait' | 'cleanUp' | 'maintain'>;
  provisionMs: number;
  clock: Clock;
  log: (line: string) => void;
}

export interface AgentApi {
  /** Answers one call (any path: an unsigned or unknown one gets 401 or 404). */
  serve(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Ends the creates held open by a `timeout` fault. */
  closeHeldOpen(): void;
}

export function createAgentApi({ state, behaviour, loops, provisionMs, clock, log }: AgentApiOptions): AgentApi {
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
      behaviour.createLog.push({ ...request, outcome, at: clock.now().toISOString(), ...(typeof requestId === 'string' ? { requestId } : {}) });
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
      const named = /^\/instances\/([^/]+)$/.exec(path);
      if (named) {
        const name = decodeURIComponent(named[1] ?? '');
        if (req.method === 'DELETE') return handleDelete(name, res);
        if (req.method === 'GET') return handleStatus(name, res);
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
