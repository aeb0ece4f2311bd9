import type { CreateOutcome } from '#domain/instances/instances.ts';
import type { Change } from '#domain/core/change.ts';
import type { Metrics } from '#runtime/context.ts';

/** What one create effect cost: its attempts (each retry too) and how it ended. */
export function recordCreateOutcome(metrics: Metrics, outcome: CreateOutcome): void {
  metrics.count('CreateAttempts', outcome.attempts);
  if (outcome.attempts > 1) metrics.count('CreateRetries', outcome.attempts - 1);
  if (outcome.ok) metrics.count('CreateSucceeded', 1);
  else {
    metrics.count('CreateFailures', 1);
    metrics.count('CreateFailuresByOutcome', 1, { outcome: outcome.failedWith ?? 'unknown' });
  }
}

/** Instances a committed change made Ready: how long each took from its creation. */
export function recordReadyInstances(metrics: Metrics, change: Change): void {
  for (const { before, after } of change.instances ?? []) {
    if (after.status !== 'Ready' || before?.status === 'Ready') continue;
    metrics.timing('TimeToReady', Date.parse(after.updatedAt) - Date.parse(after.createdAt), { machineType: after.machineType });
  }
}
