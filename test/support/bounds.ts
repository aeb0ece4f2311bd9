import type { SiteConfig } from '#config/site-config.ts';
import { createLeaseMs } from '#domain/instances/instances.ts';
import { validationCallRetryDelayMs } from '#domain/repair/validation.ts';
import { validationRules } from '#runtime/context.ts';
import { reconcilerTimeoutSeconds } from '#lib/function-timeouts.ts';

// How long a test may wait for the site to do something, derived from the config it runs: a bound is what the
// config allows at worst, so a test that passes waits only as long as the site takes, and one that fails says so
// once the config's own limit is past.

/** How long a stream reaction or a sweep run may take: the stream and sweep functions' timeout. */
export const reconcilerRunMs = (config: SiteConfig): number => reconcilerTimeoutSeconds(config) * 1000;

/**
 * A sweep that begins after now has finished within this: the timer fires within one interval, or two when it
 * skips a firing under a run still in flight, and a run lasts at most its function's timeout.
 */
export const sweepWithinMs = (config: SiteConfig, sweepIntervalMs: number): number => 2 * sweepIntervalMs + reconcilerRunMs(config);

/** How long one create call to the agent may take, every attempt and backoff included (the create's lease). */
export const createCallMs = (config: SiteConfig): number => {
  const retry = config.instance_create_retry;
  return createLeaseMs({ maxAttempts: retry.max_attempts, baseDelayMs: retry.base_delay_ms, timeoutMs: retry.timeout_ms });
};

/** How long TestSite.afterNextSweep may take: a sweep that begins after now, then the stream reactions to what it wrote. */
export const afterNextSweepWithinMs = (config: SiteConfig, sweepIntervalMs: number): number => sweepWithinMs(config, sweepIntervalMs) + reconcilerRunMs(config);

/**
 * A validation asked for now has been reported within this, one lost or refused agent call included: the call's
 * lease or its retry delay lapses, a sweep brings the machine back, the call is sent again, the suite runs.
 */
export const validationWithinMs = (config: SiteConfig, sweepIntervalMs: number): number => {
  const { callLeaseMs } = validationRules(config);
  const firstCallMs = Math.max(callLeaseMs, validationCallRetryDelayMs(1));
  return firstCallMs + sweepWithinMs(config, sweepIntervalMs) + callLeaseMs + config.simulator.validation_ms;
};
