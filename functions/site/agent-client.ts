// HTTP client of the site agent. The retry decisions live in create-retry.ts, the wire shapes in agent-contract.ts and
// the signature in request-signing.ts; this file only performs (signed) calls.

import { STATUS_CODES } from 'node:http';
import {
  agentErrorAnswer,
  agentPaths,
  instanceStatusAnswer,
  type CreateInstanceRequest,
  type InstanceStatusAnswer,
  type PowerRequest,
  type StartMaintenanceRequest,
  type ValidationRequest,
} from '#site/agent-contract.ts';
import { decideAfterAttempt, firstCreateAttempt, siteNameForAttempt, type CreateOutcome, type CreateRetryPolicy } from '#site/create-retry.ts';
import { signRequest, type SigningKeySet } from '#site/request-signing.ts';
import type { SigningKeySource } from '#site/signing-keys.ts';

export interface SiteAgentClientOptions {
  baseUrl: string;
  maxAttempts: number;
  baseDelayMs: number;
  /** Per attempt; an attempt that exceeds it is not retried (the instance may still be provisioning). */
  timeoutMs: number;
  /** The keys every call is signed with (docs/api.md "Signing"); read again once when the agent answers 401. */
  keys: SigningKeySource;
  /** Injected so tests can assert the backoff without waiting for it. */
  sleep?: (ms: number) => Promise<void>;
  fetch?: typeof fetch;
}

export type CreateInstanceResult =
  | { ok: true; siteName: string; attempts: number }
  /** `siteName`: the name the last attempt used, which a 502/504 may have left at the site for cleanup to delete. */
  | { ok: false; siteName: string; attempts: number; reason: string; retryable: false; lastOutcome: CreateOutcome };

export type DeleteInstanceResult = { ok: true; status: number; alreadyGone: boolean } | { ok: false; reason: string; status?: number };

export type AcceptedResult = { ok: true } | { ok: false; reason: string; status?: number };

export type InstanceStatusResult = { ok: true; state: InstanceStatusAnswer['state'] | 'absent' } | { ok: false; reason: string; status?: number };

/** Sent as `x-request-id`, so the agent's logs name the API request an instance call works for. */
export interface CallOptions {
  requestId?: string | undefined;
}

export interface SiteAgentClient {
  createInstance(request: CreateInstanceRequest, options?: CallOptions): Promise<CreateInstanceResult>;
  /** No internal retries: the caller owns the cleanup lease and tries again later. */
  deleteInstance(siteName: string, options?: CallOptions): Promise<DeleteInstanceResult>;
  /** Where the agent stands with an instance (asked when a cleanup report is overdue). No internal retries. */
  instanceStatus(siteName: string, options?: CallOptions): Promise<InstanceStatusResult>;
  /** Ask the agent to do maintenance work on a machine; it reports when done. No internal retries: the caller's lease does. */
  startMaintenance(machineId: string, request: StartMaintenanceRequest, options?: CallOptions): Promise<StartMaintenanceResult>;
  /** Ask the agent to validate a machine; it reports later. No internal retries: the caller owns the claim. */
  validateMachine(machineId: string, request: ValidationRequest, options?: CallOptions): Promise<AcceptedResult>;
  /** Ask the agent for a power action on an instance. No internal retries: the caller owns the claim. */
  powerInstance(siteName: string, request: PowerRequest, options?: CallOptions): Promise<StartMaintenanceResult>;
}

export type StartMaintenanceResult = { ok: true } | { ok: false; reason: string; refused: boolean };

/** One call to the agent: its answer, or why there was none. */
type Exchange =
  | { kind: 'answered'; response: Response }
  | { kind: 'timeout' }
  | { kind: 'network'; message: string }
  /** Nothing was sent: the signing keys could not be read. */
  | { kind: 'unsigned'; message: string };

export const REQUEST_ID_HEADER = 'x-request-id';

interface OutgoingRequest {
  method: string;
  url: URL;
  body: string | undefined;
  call: CallOptions;
  signal: AbortSignal;
}

/** The keys, or why the call cannot be signed (and so is not sent). */
async function readKeys(read: () => Promise<SigningKeySet>): Promise<SigningKeySet | { unsigned: Exchange }> {
  try {
    return await read();
  } catch (error) {
    return { unsigned: { kind: 'unsigned', message: `the signing keys could not be read: ${error instanceof Error ? error.message : String(error)}` } };
  }
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const statusText = (response: Response) => response.statusText || STATUS_CODES[response.status] || '';

export function createSiteAgentClient(options: SiteAgentClientOptions): SiteAgentClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const doFetch = options.fetch ?? globalThis.fetch;
  const sleep = options.sleep ?? realSleep;
  const policy: CreateRetryPolicy = { maxAttempts: options.maxAttempts, baseDelayMs: options.baseDelayMs };

  /** One request, signed with `keys` as it is sent: the URL's path and query as they go in the request line. */
  async function send(request: OutgoingRequest, keys: SigningKeySet): Promise<Exchange> {
    const { method, url, body, call, signal } = request;
    const signature = signRequest(keys, { method, target: `${url.pathname}${url.search}`, body: body ?? '' }, new Date());
    try {
      const response = await doFetch(url, {
        method,
        headers: {
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(call.requestId ? { [REQUEST_ID_HEADER]: call.requestId } : {}),
          ...signature,
        },
        ...(body === undefined ? {} : { body }),
        signal,
      });
      return { kind: 'answered', response };
    } catch (error) {
      // Checking our own signal rather than the error's name: fetch implementations disagree on what they throw.
      if (signal.aborted) return { kind: 'timeout' };
      return { kind: 'network', message: networkMessage(error) };
    }
  }

  /**
   * One call. A 401 means the agent holds other keys than these (they rotated): the keys are read again and the
   * call is sent once more, within the same timeout. The agent did nothing with a refused call, so sending it again
   * is safe even for a create; a second 401 is the call's answer.
   */
  async function exchange(method: string, path: string, body?: unknown, call: CallOptions = {}): Promise<Exchange> {
    const request: OutgoingRequest = {
      method,
      url: new URL(`${baseUrl}${path}`),
      body: body === undefined ? undefined : JSON.stringify(body),
      call,
      signal: AbortSignal.timeout(options.timeoutMs),
    };
    const keys = await readKeys(() => options.keys.current());
    if ('unsigned' in keys) return keys.unsigned;
    const first = await send(request, keys);
    if (first.kind !== 'answered' || first.response.status !== 401) return first;
    await first.response.body?.cancel().catch(() => undefined);
    const newer = await readKeys(() => options.keys.reload(keys));
    if ('unsigned' in newer) return newer.unsigned;
    return send(request, newer);
  }

  /** Why a call without a usable answer failed, worded for a failureReason. */
  function unanswered(exchange: Exclude<Exchange, { kind: 'answered' }>, what: string): string {
    if (exchange.kind === 'timeout') return `site agent did not answer the ${what} within ${options.timeoutMs} ms`;
    if (exchange.kind === 'unsigned') return `site agent ${what} not sent: ${exchange.message}`;
    return `site agent unreachable for the ${what}: ${exchange.message}`;
  }

  async function attemptCreate(body: CreateInstanceRequest, call: CallOptions): Promise<CreateOutcome> {
    const sent = await exchange('POST', agentPaths.instances, body, call);
    if (sent.kind === 'timeout') return { kind: 'timeout', timeoutMs: options.timeoutMs };
    if (sent.kind === 'network') return sent;
    // Nothing reached the agent, as with a refused connection: the create-retry rule may safely send it again.
    if (sent.kind === 'unsigned') return { kind: 'network', message: `not sent, ${sent.message}` };
    const { response } = sent;
    // The status decides; a body lost after the headers arrived changes nothing about what the agent did.
    const payload = await response.json().catch(() => undefined);
    if (response.ok) return { kind: 'created', status: response.status };
    const code = agentErrorAnswer.safeParse(payload).data?.code;
    return { kind: 'http-error', status: response.status, statusText: statusText(response), ...(code ? { code } : {}) };
  }

  return {
    async createInstance(request, call = {}) {
      let progress = firstCreateAttempt;
      for (;;) {
        const siteName = siteNameForAttempt(request.name, progress.attempt, progress.sawHttpError);
        const outcome = await attemptCreate({ ...request, name: siteName }, call);
        const decision = decideAfterAttempt(policy, progress, outcome);
        if (decision.action === 'succeeded') return { ok: true, siteName, attempts: progress.attempt };
        if (decision.action === 'stop') {
          return { ok: false, siteName, attempts: progress.attempt, reason: decision.reason, retryable: false, lastOutcome: outcome };
        }
        await sleep(decision.delayMs);
        progress = decision.next;
      }
    },

    async startMaintenance(machineId, request, call = {}) {
      const sent = await exchange('POST', agentPaths.machineMaintenance(machineId), request, call);
      if (sent.kind !== 'answered') return { ok: false, refused: false, reason: unanswered(sent, 'maintenance start') };
      const { response } = sent;
      await response.body?.cancel().catch(() => undefined);
      if (response.ok) return { ok: true };
      // A 5xx may be passing: asked again when the lease lapses. A 4xx is the agent's no.
      return { ok: false, refused: response.status < 500, reason: answeredWith(response, 'maintenance start') };
    },

    async deleteInstance(siteName, call = {}) {
      const sent = await exchange('DELETE', agentPaths.instance(siteName), undefined, call);
      if (sent.kind !== 'answered') return { ok: false, reason: unanswered(sent, 'delete') };
      const { response } = sent;
      await response.body?.cancel().catch(() => undefined);
      if (response.ok) return { ok: true, status: response.status, alreadyGone: false };
      // The goal of a delete is "gone": an agent that no longer knows the name has reached it already.
      if (response.status === 404) return { ok: true, status: 404, alreadyGone: true };
      return { ok: false, status: response.status, reason: answeredWith(response, 'delete') };
    },

    async instanceStatus(siteName, call = {}) {
      const sent = await exchange('GET', agentPaths.instance(siteName), undefined, call);
      if (sent.kind !== 'answered') return { ok: false, reason: unanswered(sent, 'status query') };
      const { response } = sent;
      if (response.status === 404) {
        await response.body?.cancel().catch(() => undefined);
        return { ok: true, state: 'absent' };
      }
      if (!response.ok) {
        await response.body?.cancel().catch(() => undefined);
        return { ok: false, status: response.status, reason: answeredWith(response, 'status query') };
      }
      const answer = instanceStatusAnswer.safeParse(await response.json().catch(() => undefined));
      if (!answer.success) {
        return {
          ok: false,
          status: response.status,
          reason: `site agent answered ${response.status} to the status query with a body that is not { state: "present" | "cleaning" }`,
        };
      }
      return { ok: true, state: answer.data.state };
    },

    async powerInstance(siteName, request, call = {}) {
      const sent = await exchange('POST', agentPaths.power(siteName), request, call);
      if (sent.kind !== 'answered') return { ok: false, refused: false, reason: unanswered(sent, 'power action') };
      const { response } = sent;
      await response.body?.cancel().catch(() => undefined);
      if (response.ok) return { ok: true };
      // A 5xx may be passing: sent again after a backoff. A 4xx is the agent's no (404: it holds no such instance).
      return { ok: false, refused: response.status < 500, reason: answeredWith(response, 'power action') };
    },

    async validateMachine(machineId, request, call = {}) {
      const sent = await exchange('POST', agentPaths.validation(machineId), request, call);
      if (sent.kind !== 'answered') return { ok: false, reason: unanswered(sent, 'validation request') };
      const { response } = sent;
      await response.body?.cancel().catch(() => undefined);
      return response.ok ? { ok: true } : { ok: false, status: response.status, reason: answeredWith(response, 'validation request') };
    },
  };
}

function answeredWith(response: Response, what: string): string {
  const status = `${response.status} ${statusText(response)}`.trimEnd();
  return `site agent answered ${status} to the ${what}`;
}

/** fetch hides the useful part (ECONNREFUSED, ENOTFOUND...) in `cause`. */
function networkMessage(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  const code = typeof cause?.code === 'string' ? cause.code : undefined;
  const detail = typeof cause?.message === 'string' ? cause.message : error instanceof Error ? error.message : String(error);
  return code && !detail.includes(code) ? `${code}: ${detail}` : detail;
}
