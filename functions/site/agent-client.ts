// HTTP client of the site agent. The retry decisions live in create-retry.ts; this file only performs calls.

import { STATUS_CODES } from 'node:http';
import {
  decideAfterAttempt,
  firstCreateAttempt,
  siteNameForAttempt,
  type CreateOutcome,
  type CreateRetryPolicy,
} from '#site/create-retry.ts';

export interface SiteAgentClientOptions {
  baseUrl: string;
  maxAttempts: number;
  baseDelayMs: number;
  /** Per attempt; an attempt that exceeds it is not retried (the instance may still be provisioning). */
  timeoutMs: number;
  /** Injected so tests can assert the backoff without waiting for it. */
  sleep?: (ms: number) => Promise<void>;
  fetch?: typeof fetch;
}

export interface CreateInstanceRequest {
  name: string;
  machineId: string;
  instanceId: string;
  /** Same on every attempt, so an agent that honours it never creates twice. */
  clientToken: string;
}

export type CreateInstanceResult =
  | { ok: true; siteName: string; attempts: number }
  /** `siteName`: the name the last attempt used, which a 502/504 may have left at the site for cleanup to delete. */
  | { ok: false; siteName: string; attempts: number; reason: string; retryable: false; lastOutcome: CreateOutcome };

export type DeleteInstanceResult =
  | { ok: true; status: number; alreadyGone: boolean }
  | { ok: false; reason: string; status?: number };

export interface SiteAgentClient {
  createInstance(request: CreateInstanceRequest): Promise<CreateInstanceResult>;
  /** No internal retries: the caller owns the cleanup lease and tries again later. */
  deleteInstance(siteName: string): Promise<DeleteInstanceResult>;
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function createSiteAgentClient(options: SiteAgentClientOptions): SiteAgentClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const doFetch = options.fetch ?? globalThis.fetch;
  const sleep = options.sleep ?? realSleep;
  const policy: CreateRetryPolicy = { maxAttempts: options.maxAttempts, baseDelayMs: options.baseDelayMs };

  async function attemptCreate(body: CreateInstanceRequest): Promise<CreateOutcome> {
    const signal = AbortSignal.timeout(options.timeoutMs);
    let response: Response;
    try {
      response = await doFetch(`${baseUrl}/instances`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(body),
        signal,
      });
    } catch (error) {
      // Checking our own signal rather than the error's name: fetch implementations disagree on what they throw.
      if (signal.aborted) return { kind: 'timeout', timeoutMs: options.timeoutMs };
      return { kind: 'network', message: networkMessage(error) };
    }
    // The status decides; a body lost after the headers arrived changes nothing about what the agent did.
    const payload = (await response.json().catch(() => undefined)) as { code?: unknown } | null | undefined;
    if (response.ok) return { kind: 'created', status: response.status };
    const code = typeof payload?.code === 'string' ? payload.code : undefined;
    return {
      kind: 'http-error',
      status: response.status,
      statusText: response.statusText || STATUS_CODES[response.status] || '',
      ...(code ? { code } : {}),
    };
  }

  return {
    async createInstance(request) {
      let progress = firstCreateAttempt;
      for (;;) {
        const siteName = siteNameForAttempt(request.name, progress.attempt, progress.sawHttpError);
        const outcome = await attemptCreate({ ...request, name: siteName });
        const decision = decideAfterAttempt(policy, progress, outcome);
        if (decision.action === 'succeeded') return { ok: true, siteName, attempts: progress.attempt };
        if (decision.action === 'stop') {
          return { ok: false, siteName, attempts: progress.attempt, reason: decision.reason, retryable: false, lastOutcome: outcome };
        }
        await sleep(decision.delayMs);
        progress = decision.next;
      }
    },

    async deleteInstance(siteName) {
      const signal = AbortSignal.timeout(options.timeoutMs);
      let response: Response;
      try {
        response = await doFetch(`${baseUrl}/instances/${encodeURIComponent(siteName)}`, {
          method: 'DELETE',
          headers: { accept: 'application/json' },
          signal,
        });
      } catch (error) {
        if (signal.aborted) return { ok: false, reason: `site agent did not answer the delete within ${options.timeoutMs} ms` };
        return { ok: false, reason: `site agent unreachable for the delete: ${networkMessage(error)}` };
      }
      await response.body?.cancel().catch(() => undefined);
      if (response.ok) return { ok: true, status: response.status, alreadyGone: false };
      // The goal of a delete is "gone": an agent that no longer knows the name has reached it already.
      if (response.status === 404) return { ok: true, status: 404, alreadyGone: true };
      const text = response.statusText || STATUS_CODES[response.status] || '';
      return { ok: false, status: response.status, reason: `site agent answered ${response.status} ${text} to the delete`.trimEnd() };
    },
  };
}

/** fetch hides the useful part (ECONNREFUSED, ENOTFOUND...) in `cause`. */
function networkMessage(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  const code = typeof cause?.code === 'string' ? cause.code : undefined;
  const detail = typeof cause?.message === 'string' ? cause.message : error instanceof Error ? error.message : String(error);
  return code && !detail.includes(code) ? `${code}: ${detail}` : detail;
}
