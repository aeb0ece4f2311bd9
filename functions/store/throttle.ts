import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { timeLeftMs } from '#store/deadline.ts';
import { ThrottledError } from '#store/port.ts';

/**
 * DynamoDB's throttles, and the store's retry of them. The SDK retries a throttled call a few times on its own, but
 * not a transaction cancelled for a `ThrottlingError`, nor the items a batch leaves unprocessed: those are retried
 * here, with jittered backoff, for as long as the invocation's deadline allows. What still does not get through is a ThrottledError, which the
 * API answers with 503 `throttled` and `Retry-After`.
 */

const THROTTLE_NAMES = new Set(['ThrottlingException', 'ProvisionedThroughputExceededException', 'RequestLimitExceeded']);

/** How long a store call keeps retrying a throttle outside any invocation (no deadline known): inside an API function's 10 s. */
export const THROTTLE_RETRY_BUDGET_MS = 4_000;
/** Kept back from the time left for a last try (the SDK's own retries of one try take up to ~3 s) and for answering. */
export const THROTTLE_RESERVE_MS = 3_500;

/** How long a store call may keep retrying now: the invocation's time left, less the reserve. */
export function throttleBudgetMs(timeLeft: number | undefined = timeLeftMs()): number {
  return timeLeft === undefined ? THROTTLE_RETRY_BUDGET_MS : Math.max(0, timeLeft - THROTTLE_RESERVE_MS);
}
const FIRST_DELAY_MS = 25;
const MAX_DELAY_MS = 400;

/** Throttled as a whole, or a transaction cancelled for a throttle and no lost race (a lost race is decided first). */
export function isThrottled(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (THROTTLE_NAMES.has(error.name)) return true;
  if (!(error instanceof TransactionCanceledException) && error.name !== 'TransactionCanceledException') return false;
  const codes = ((error as TransactionCanceledException).CancellationReasons ?? []).map((reason) => reason.Code);
  return codes.includes('ThrottlingError') && !codes.includes('ConditionalCheckFailed') && !codes.includes('TransactionConflict');
}

/** Full jitter: anywhere up to the doubled delay, so callers throttled together do not come back together. */
export const throttleDelayMs = (attempt: number, random: () => number = Math.random): number =>
  Math.floor(random() * Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** attempt));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `call`, again after each throttle while the budget lasts; then a ThrottledError. Any other error goes through. */
export async function retryThrottled<T>(call: () => Promise<T>, budgetMs = throttleBudgetMs()): Promise<T> {
  const deadline = Date.now() + budgetMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (!isThrottled(error)) throw error;
      const delay = throttleDelayMs(attempt);
      if (Date.now() + delay > deadline) throw new ThrottledError(`DynamoDB throttled ${attempt + 1} tries over ${budgetMs} ms`, { cause: error });
      await sleep(delay);
    }
  }
}

/**
 * A batch call whose answer names what was left unprocessed: sent again for the rest while the budget lasts. Each
 * round's result is handed to `take` (what went through); a ThrottledError means some items never did.
 */
export async function untilProcessed<P, R>(pending: P[], send: (pending: P[]) => Promise<R>, left: (result: R) => P[], budgetMs = throttleBudgetMs()) {
  const deadline = Date.now() + budgetMs;
  const results: R[] = [];
  for (let attempt = 0; pending.length > 0; attempt++) {
    if (attempt > 0) {
      const delay = throttleDelayMs(attempt);
      if (Date.now() + delay > deadline)
        throw new ThrottledError(`DynamoDB left ${pending.length} items unprocessed after ${attempt} tries over ${budgetMs} ms`);
      await sleep(delay);
    }
    const result = await retryThrottled(() => send(pending), Math.max(0, deadline - Date.now()));
    results.push(result);
    pending = left(result);
  }
  return results;
}
