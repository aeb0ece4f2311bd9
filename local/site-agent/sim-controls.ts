// The simulated agent's /_sim/* controls: test controls that make it misbehave as a real site can (faults on
// creates and cleanups, a machine leaving the roster, health alerts, a signing key rotation) and show what it was
// asked. They take no signature, and answer errors as the site's API does: problem+json.

import type { IncomingMessage, ServerResponse } from 'node:http';
import * as z from 'zod';
import { notFound, Rejection } from '#domain/core/rejection.ts';
import { problemContentType, toProblem } from '#http/problem.ts';
import { fieldErrors, validationFailed } from '#http/validation.ts';
import { machineAlerts } from '#site/agent-contract.ts';
import type { SigningKey } from '#site/request-signing.ts';
import { signingKeyId, signingSecret } from '#site/signing-keys.ts';
import { readJsonBody } from '../request-body.ts';
import type { AgentState } from './agent-state.ts';
import { sendJson } from './wire.ts';

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

/** The next result of a machine's validation (POST /_sim/machines/{id}/validation); `never` never reports. */
export interface SimValidationOutcome {
  outcome: 'pass' | 'fail' | 'never';
  failing?: string[] | undefined;
  delayMs?: number | undefined;
}

/** Every call the agent received, by kind: what GET /_sim/requests lists. */
export type AgentRequestRecord =
  | ({ kind: 'create' } & CreateRequestRecord)
  | { kind: 'delete' | 'status'; name: string; at: string; requestId?: string }
  | { kind: 'validation'; machineId: string; validationId: string; suite: string; reason: string; outcome: SimValidationOutcome['outcome']; at: string }
  | { kind: 'power'; name: string; action: string; outcome: CreateRequestOutcome; at: string; requestId?: string };

/** What the controls change in how the agent behaves, and the log of calls they show. */
export interface AgentBehaviour {
  /** Played one per create received, then success again. */
  createFaults: CreateFault[];
  /** Played one per power action received, then success again (the outcomes of a create). */
  powerFaults: CreateFault[];
  /** The next validation's result, by machine; each is used once, then validations pass again. */
  validationOutcomes: Map<string, SimValidationOutcome>;
  /** One per DELETE accepted; false: that cleanup fails. */
  cleanupFaults: boolean[];
  /** Played one per maintenance start received (the outcomes of a create), then success again. */
  maintenanceFaults: CreateFault[];
  /** Machines left out of the roster: their beats stop. */
  silencedMachines: Set<string>;
  /** The keys a call may be signed with, by id. */
  acceptedKeys: Map<string, SigningKey>;
  requestLog: AgentRequestRecord[];
}

export interface ControlResponse {
  status: number;
  body?: unknown;
  /** application/json unless said otherwise (a problem document). */
  contentType?: string;
}

export interface SimControls {
  /** Undefined when `path` is not a /_sim route. */
  control(method: string, path: string, body: unknown): Promise<ControlResponse | undefined>;
  /** control() for a node:http request; false when the path is not a /_sim route (nothing was answered). */
  handleControl(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
}

/** POST /_sim/machines/{id}/health: what the agent reports for the machine from now on; an empty list clears it. */
const simHealthBody = z.strictObject({ alerts: machineAlerts });
const simHeartbeatBody = z.strictObject({ stopped: z.boolean() });
/** POST /_sim/keys: a key the agent accepts from now on. */
const simKeyBody = z.strictObject({ id: signingKeyId, secret: signingSecret });
const createFaultStatuses = new Set([400, 404, 409, 422, 429, 500, 501, 502, 503, 504]);
const createFault = z.union([z.literal(['network', 'timeout']), z.number().refine((n) => createFaultStatuses.has(n))], {
  error: `a create outcome is "network", "timeout" or one of ${[...createFaultStatuses].join(', ')}`,
});
const simValidationBody = z.strictObject({
  outcome: z.enum(['pass', 'fail', 'never']),
  failing: z.array(z.string().min(1).max(128)).max(64).optional(),
  delayMs: z.number().int().min(0).max(600_000).optional(),
});
const simFaultsBody = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('create'), outcomes: z.array(createFault) }),
  z.strictObject({ op: z.literal('power'), outcomes: z.array(createFault) }),
  // false = a failed cleanup
  z.strictObject({ op: z.literal('cleanup'), outcomes: z.array(z.boolean()) }),
  z.strictObject({ op: z.literal('maintenance'), outcomes: z.array(createFault) }),
]);

export function createSimControls(machineIds: ReadonlySet<string>, state: AgentState, behaviour: AgentBehaviour, log: (line: string) => void): SimControls {
  const { createFaults, powerFaults, cleanupFaults, maintenanceFaults, silencedMachines, acceptedKeys, requestLog } = behaviour;

  async function control(method: string, path: string, body: unknown): Promise<ControlResponse | undefined> {
    if (path === '/_sim/faults') {
      if (method === 'DELETE') {
        createFaults.length = 0;
        cleanupFaults.length = 0;
        maintenanceFaults.length = 0;
        powerFaults.length = 0;
        return { status: 204 };
      }
      if (method === 'GET') {
        return { status: 200, body: { create: [...createFaults], cleanup: [...cleanupFaults], power: [...powerFaults], maintenance: [...maintenanceFaults] } };
      }
      if (method !== 'POST') return methodNotAllowed();
      return queueFaults(body);
    }
    if (path === '/_sim/requests') {
      if (method === 'GET') return { status: 200, body: { items: requestLog.map((r) => ({ ...r })) } };
      if (method === 'DELETE') {
        requestLog.length = 0;
        return { status: 204 };
      }
      return methodNotAllowed();
    }
    const heartbeat = /^\/_sim\/machines\/([^/]+)\/heartbeat$/.exec(path);
    if (heartbeat) return heartbeatControl(method, decodeURIComponent(heartbeat[1] ?? ''), body);
    const validation = /^\/_sim\/machines\/([^/]+)\/validation$/.exec(path);
    if (validation) return validationControl(method, decodeURIComponent(validation[1] ?? ''), body);
    const probes = /^\/_sim\/machines\/([^/]+)\/health$/.exec(path);
    if (probes) return healthControl(method, decodeURIComponent(probes[1] ?? ''), body);
    if (path === '/_sim/keys') return keysControl(method, body);
    const oneKey = /^\/_sim\/keys\/([^/]+)$/.exec(path);
    if (oneKey) return removeKeyControl(method, decodeURIComponent(oneKey[1] ?? ''));
    if (path === '/_sim' || path.startsWith('/_sim/')) return problem(notFound(`simulator control ${path}`));
    return undefined;
  }

  function heartbeatControl(method: string, id: string, body: unknown): ControlResponse {
    if (method !== 'POST') return methodNotAllowed();
    if (!machineIds.has(id)) return problem(notFound(`machine ${id}`));
    const parsed = simHeartbeatBody.safeParse(body);
    if (!parsed.success) return invalidBody(parsed.error);
    const { stopped } = parsed.data;
    if (stopped) silencedMachines.add(id);
    else silencedMachines.delete(id);
    log(`site-sim: heartbeats of ${id} ${stopped ? 'stopped' : 'resumed'}`);
    return { status: 200, body: { id, stopped } };
  }

  function validationControl(method: string, id: string, body: unknown): ControlResponse {
    if (method !== 'POST') return methodNotAllowed();
    if (!machineIds.has(id)) return problem(notFound(`machine ${id}`));
    const parsed = simValidationBody.safeParse(body);
    if (!parsed.success) return invalidBody(parsed.error);
    behaviour.validationOutcomes.set(id, parsed.data);
    log(`site-sim: next validation of ${id}: ${parsed.data.outcome}`);
    return { status: 200, body: { id, next: parsed.data } };
  }

  function healthControl(method: string, id: string, body: unknown): ControlResponse {
    if (method !== 'POST' && method !== 'GET') return methodNotAllowed();
    if (!machineIds.has(id)) return problem(notFound(`machine ${id}`));
    if (method === 'GET') return { status: 200, body: { id, alerts: state.alertsOf(id) ?? [] } };
    const parsed = simHealthBody.safeParse(body);
    if (!parsed.success) return invalidBody(parsed.error);
    const { alerts } = parsed.data;
    state.setAlerts(id, alerts);
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
    const queue = { create: createFaults, power: powerFaults, cleanup: cleanupFaults, maintenance: maintenanceFaults }[request.op] as unknown[];
    queue.push(...request.outcomes);
    return { status: 200, body: { op: request.op, queued: [...queue] } };
  }

  return {
    control,
    async handleControl(req, res) {
      const path = new URL(req.url ?? '/', 'http://sim').pathname;
      if (path !== '/_sim' && !path.startsWith('/_sim/')) return false;
      const body = req.method === 'POST' ? await readJsonBody(req) : undefined;
      const answer = (await control(req.method ?? 'GET', path, body)) ?? problem(notFound(`simulator control ${path}`));
      sendJson(res, answer.status, answer.body, answer.contentType);
      return true;
    },
  };
}

function methodNotAllowed(): ControlResponse {
  return problem(new Rejection(405, 'method-not-allowed', 'this simulator control does not take that method'));
}

const problem = (rejection: Rejection): ControlResponse => ({ status: rejection.status, contentType: problemContentType, body: toProblem(rejection) });
const invalidBody = (error: z.ZodError): ControlResponse => problem(validationFailed(fieldErrors(error.issues, 'body')));
