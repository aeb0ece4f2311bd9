import type { Change, Versioned } from '#domain/core/change.ts';
import type { Instance, Machine } from '#domain/core/model.ts';
import { conflict } from '#domain/core/rejection.ts';
import { statusCheckDelayMs, type InstanceStatusOutcome } from '#domain/instances/status-checks.ts';
import { addMs, ageMs, iso } from '#domain/core/time.ts';

/** The machine's part of ending an instance: into Cleanup, with the agent's DELETE still to be sent. */
export function startCleanup(machine: Machine, instanceId: string, at: string): Versioned<Machine>[] {
  if (machine.instanceId !== instanceId) return [];
  return [
    {
      before: machine,
      after: { ...machine, state: 'Cleanup', cleanup: { instanceId, phase: 'pending', attempts: 0 }, updatedAt: at },
    },
  ];
}

export interface CleanupTimings {
  /**
   * How long to wait for the agent's cleanup report after a DELETE was sent before asking the agent (once it was
   * accepted) or sending it again (its answer was lost): the lease the DELETE's claim takes.
   */
  reportTimeoutMs: number;
  /** Backoff after a DELETE the agent did not accept: base × attempts, capped. */
  retryBaseMs: number;
  retryMaxMs: number;
}

/** How long an agent may take to report is the site's to say (`[site_agent] report_timeout_seconds`); the DELETE's backoff is ours. */
export const cleanupTimings = (reportTimeoutMs: number): CleanupTimings => ({ reportTimeoutMs, retryBaseMs: 2_000, retryMaxMs: 5 * 60_000 });

/**
 * Claim sending the agent's DELETE. Waits while the instance's create call is in flight: the agent may not know
 * the instance's final name yet, and a DELETE racing a create could leave a VM behind.
 */
export function claimCleanup(machine: Machine, instance: Instance | null, now: Date, timings: CleanupTimings): Change | null {
  const cleanup = machine.cleanup;
  // Once the agent accepted the DELETE, an overdue report is the agent's to explain (claimStatusCheck).
  if (machine.state !== 'Cleanup' || !cleanup || cleanup.phase === 'failed' || cleanup.accepted) return null;
  if (cleanup.phase === 'requested' && ageMs(now, cleanup.leaseUntil) < 0) return null;
  if (instance?.creation.phase === 'in-flight' && ageMs(now, instance.creation.leaseUntil) < 0) return null;
  const claimed: Machine = {
    ...machine,
    cleanup: { ...cleanup, phase: 'requested', attempts: cleanup.attempts + 1, leaseUntil: iso(addMs(now, timings.reportTimeoutMs)) },
    updatedAt: iso(now),
  };
  return { machines: [{ before: machine, after: claimed }], history: [] };
}

export type DeleteOutcome = { kind: 'accepted' } | { kind: 'gone' } | { kind: 'error'; reason: string };

/**
 * What the agent said to the DELETE. Accepted: wait for its report until the claim's lease, the report timeout from
 * when the DELETE was sent; kept as it is, the machine's entry in the due index stays where it is (moving it by the
 * call's duration would cost the index a delete and a put on a shared key). Gone: the agent has nothing under that
 * name (e.g. a create that never committed), so there is nothing to sanitize and the machine returns at once.
 * Error: try again after a backoff.
 */
export function recordDeleteOutcome(machine: Machine, instance: Instance | null, outcome: DeleteOutcome, now: Date, timings: CleanupTimings): Change | null {
  const cleanup = machine.cleanup;
  if (machine.state !== 'Cleanup' || cleanup?.phase !== 'requested') return null;
  if (outcome.kind === 'accepted') {
    const { error: _superseded, ...rest } = cleanup;
    const awaiting: Machine = { ...machine, cleanup: { ...rest, accepted: true, checks: 0 }, updatedAt: iso(now) };
    return { machines: [{ before: machine, after: awaiting }], history: [] };
  }
  if (outcome.kind === 'gone') return finishCleanup(machine, instance, { ok: true, message: 'site agent had no such instance' }, 'site-agent', now);
  const backoff = Math.min(timings.retryBaseMs * cleanup.attempts, timings.retryMaxMs);
  const retrying: Machine = {
    ...machine,
    cleanup: { ...cleanup, leaseUntil: iso(addMs(now, backoff)), error: outcome.reason },
    updatedAt: iso(now),
  };
  return { machines: [{ before: machine, after: retrying }], history: [] };
}

/**
 * The report of an accepted DELETE is overdue: claim asking the agent about the instance. The claim's lease is also
 * when to ask again if no answer settles it (the agent is still cleaning, or did not answer).
 */
export function claimStatusCheck(machine: Machine, now: Date): Change | null {
  const cleanup = machine.cleanup;
  if (machine.state !== 'Cleanup' || cleanup?.phase !== 'requested' || !cleanup.accepted) return null;
  if (ageMs(now, cleanup.leaseUntil) < 0) return null;
  const checks = (cleanup.checks ?? 0) + 1;
  const claimed: Machine = { ...machine, cleanup: { ...cleanup, checks, leaseUntil: iso(addMs(now, statusCheckDelayMs(checks))) }, updatedAt: iso(now) };
  return { machines: [{ before: machine, after: claimed }], history: [] };
}

/**
 * What the agent said about an instance whose cleanup report is overdue. Absent: the cleanup finished and its report
 * was lost, so it ends as if the report had come. Present: the agent lost the DELETE, which is sent again (the
 * agent treats it idempotently). Cleaning, or no answer: wait; the claim's lease already says until when.
 */
export function recordStatusCheck(machine: Machine, instance: Instance | null, outcome: InstanceStatusOutcome, now: Date): Change | null {
  const cleanup = machine.cleanup;
  if (machine.state !== 'Cleanup' || cleanup?.phase !== 'requested' || !cleanup.accepted) return null;
  if (outcome.kind === 'absent') {
    return finishCleanup(machine, instance, { ok: true, message: 'site agent no longer has the instance; its cleanup report was lost' }, 'site-agent', now);
  }
  if (outcome.kind !== 'present') return null;
  const resend: Machine = { ...machine, cleanup: { instanceId: cleanup.instanceId, phase: 'pending', attempts: cleanup.attempts }, updatedAt: iso(now) };
  return { machines: [{ before: machine, after: resend }], history: [] };
}

export interface CleanupReport {
  ok: boolean;
  message?: string;
}

/**
 * The agent's cleanup report. Success returns the machine to the pool; failure keeps it out with the reason, for an
 * operator. Either way the tenant's instance is over.
 */
export function finishCleanup(machine: Machine, instance: Instance | null, report: CleanupReport, actor: string, now: Date): Change {
  if (machine.state !== 'Cleanup' || !machine.cleanup) {
    throw conflict('invalid-state', `machine ${machine.id} is ${machine.state}, not in Cleanup`);
  }
  const at = iso(now);
  const ended =
    instance && (instance.status === 'Terminating' || instance.status === 'Provisioning' || instance.status === 'Ready')
      ? [{ before: instance, after: { ...instance, status: 'Terminated' as const, updatedAt: at } }]
      : [];
  const after: Machine = report.ok
    ? { ...machine, state: 'Ready', instanceId: undefined, assignedAt: undefined, boundMetaInstanceId: undefined, cleanup: undefined, updatedAt: at }
    : { ...machine, cleanup: { ...machine.cleanup, phase: 'failed', leaseUntil: undefined, error: report.message ?? 'cleanup failed' }, updatedAt: at };
  return {
    machines: [{ before: machine, after }],
    instances: ended,
    history: [
      {
        machineId: machine.id,
        at,
        actor,
        action: report.ok ? 'cleanup-succeeded' : 'cleanup-failed',
        instanceId: machine.cleanup.instanceId,
        ...(report.message ? { message: report.message } : {}),
        changes: report.ok ? { state: { from: 'Cleanup', to: 'Ready' } } : { cleanup: { to: 'failed' } },
      },
    ],
  };
}
