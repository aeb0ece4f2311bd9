import type { SiteConfig } from '#config/site-config.ts';
import { createLeaseMs } from '#domain/instances/instances.ts';
import type { FunctionName } from './lambda-functions.ts';

/**
 * How long each function may run, for the stack and for the local runner alike, so a handler never gets more time
 * locally than Lambda gives it.
 */

/** The API functions: well inside the HTTP API's 30 s integration limit (lib/aws-limits.ts checks it). */
export const API_FUNCTION_TIMEOUT_SECONDS = 10;

/** The stream and sweep functions may wait on the site agent for a whole create lease; that plus a minute of work. */
export function reconcilerTimeoutSeconds(config: SiteConfig): number {
  const retry = config.instance_create_retry;
  const leaseSeconds = createLeaseMs({ maxAttempts: retry.max_attempts, baseDelayMs: retry.base_delay_ms, timeoutMs: retry.timeout_ms }) / 1000;
  return Math.min(900, Math.max(60, Math.ceil(leaseSeconds + 60)));
}

/** Each function's timeout: the reconcilers' for the stream and the sweep, the API's for the rest. */
export const functionTimeoutSeconds = (name: FunctionName, config: SiteConfig): number =>
  name === 'StreamHandler' || name === 'SweepHandler' ? reconcilerTimeoutSeconds(config) : API_FUNCTION_TIMEOUT_SECONDS;
