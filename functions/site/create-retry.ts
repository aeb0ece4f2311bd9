// The create-retry rule for the site agent, kept free of I/O so every row of it can be tested with a fake clock.
//
// Only answers that prove the create did not commit are retried: 500 (the agent failed the create) and 503 (no
// placement). 502/504 come from a gateway that may have lost the agent's answer after the instance was made, so a
// retry could double-create. Network failures are retried because a create that did reach the agent left its name
// behind and the retry 409s harmlessly. Timeouts are not: the instance may still be provisioning.

/** What one POST {agent}/instances came to. */
export type CreateOutcome =
  | { kind: 'created'; status: number }
  | { kind: 'http-error'; status: number; statusText: string; code?: string }
  | { kind: 'network'; message: string }
  | { kind: 'timeout'; timeoutMs: number };

export interface CreateRetryPolicy {
  /** 1 disables retries. */
  maxAttempts: number;
  baseDelayMs: number;
}

export const defaultCreateRetryPolicy: CreateRetryPolicy = { maxAttempts: 3, baseDelayMs: 250 };

export type OutcomeClass = { kind: 'success' } | { kind: 'retryable' } | { kind: 'final'; why: string };

export function classifyCreateOutcome(outcome: CreateOutcome): OutcomeClass {
  switch (outcome.kind) {
    case 'created':
      return { kind: 'success' };
    case 'network':
      return { kind: 'retryable' };
    case 'timeout':
      return { kind: 'final', why: 'the instance may still be provisioning' };
    case 'http-error': {
      const { status } = outcome;
      if (status === 500 || status === 503) return { kind: 'retryable' };
      if (status === 502 || status === 504) return { kind: 'final', why: 'the create may have committed' };
      if (status === 409) return { kind: 'final', why: 'the name is already in use at the site' };
      // The client has already read its signing keys again and sent the create once more (agent-client.ts).
      if (status === 401) return { kind: 'final', why: 'the agent refused the signature, also with the signing keys read again' };
      if (status >= 400 && status < 500) return { kind: 'final', why: 'the agent rejected the request' };
      // Any other status is not known to mean "nothing was created", so a retry could double-create.
      return { kind: 'final', why: 'only 500 and 503 prove the create did not happen' };
    }
  }
}

/** Delay before the attempt after `failedAttempt` (1-based): base × attempt. */
export function retryDelayMs(policy: CreateRetryPolicy, failedAttempt: number): number {
  return Math.max(0, policy.baseDelayMs) * failedAttempt;
}

/**
 * A failed create can leave its name registered at the site until async cleanup runs, so once the agent has
 * answered with an HTTP error, later attempts take a deterministic `-r<N>` suffix to dodge that residue.
 * Attempt 1 keeps the plain name so the path without retries is unchanged.
 */
export function siteNameForAttempt(name: string, attempt: number, sawHttpError: boolean): string {
  return attempt > 1 && sawHttpError ? `${name}-r${attempt}` : name;
}

/** Where a create stands: the attempt about to be (or just) made, and whether an HTTP error came back before it. */
export interface CreateProgress {
  attempt: number;
  sawHttpError: boolean;
}

export const firstCreateAttempt: CreateProgress = { attempt: 1, sawHttpError: false };

export type CreateDecision = { action: 'succeeded' } | { action: 'retry'; delayMs: number; next: CreateProgress } | { action: 'stop'; reason: string };

export function decideAfterAttempt(policy: CreateRetryPolicy, progress: CreateProgress, outcome: CreateOutcome): CreateDecision {
  const verdict = classifyCreateOutcome(outcome);
  if (verdict.kind === 'success') return { action: 'succeeded' };
  const what = describeOutcome(outcome, progress.attempt);
  if (verdict.kind === 'final') return { action: 'stop', reason: `${what} (not retried: ${verdict.why})` };
  const maxAttempts = Math.max(1, Math.floor(policy.maxAttempts));
  if (progress.attempt >= maxAttempts) {
    const why = maxAttempts === 1 ? 'retries disabled: max_attempts is 1' : `gave up after ${maxAttempts} attempts`;
    return { action: 'stop', reason: `${what} (${why})` };
  }
  return {
    action: 'retry',
    delayMs: retryDelayMs(policy, progress.attempt),
    next: {
      attempt: progress.attempt + 1,
      sawHttpError: progress.sawHttpError || outcome.kind === 'http-error',
    },
  };
}

/** Human wording of a failed attempt, for an instance's failureReason. */
export function describeOutcome(outcome: CreateOutcome, attempt: number): string {
  switch (outcome.kind) {
    case 'created':
      return `site agent created the instance on attempt ${attempt}`;
    case 'http-error': {
      const text = outcome.statusText ? ` ${outcome.statusText}` : '';
      const code = outcome.code ? ` (${outcome.code})` : '';
      return `site agent answered ${outcome.status}${text}${code} on attempt ${attempt}`;
    }
    case 'network':
      return `site agent unreachable on attempt ${attempt}: ${outcome.message}`;
    case 'timeout':
      return `site agent did not answer within ${outcome.timeoutMs} ms on attempt ${attempt}`;
  }
}
