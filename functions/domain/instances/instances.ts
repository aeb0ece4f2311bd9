import type { Change } from '#domain/core/change.ts';
import type { HistoryEntry, Instance, Machine, RepairLog } from '#domain/core/model.ts';
import { hasOverride, SOURCES } from '#domain/core/overrides.ts';
import { applyOverrideEdits, releaseOverrideEdits, type OverrideEdits, type ReleaseReport } from '#domain/repair/repair.ts';
import { logged } from '#domain/repair/safety.ts';
import { repairEvent } from '#domain/events/events.ts';
import { startCleanup } from '#domain/instances/cleanup.ts';
import { conflict } from '#domain/core/rejection.ts';
import { statusCheckDelayMs, type InstanceStatusOutcome } from '#domain/instances/status-checks.ts';
import { addMs, ageMs, iso } from '#domain/core/time.ts';
import { withValidationStarted } from '#domain/repair/validation.ts';

export interface NewInstanceSpec {
  id: string;
  org: string;
  name: string;
  labels: Record<string, string>;
  clientToken: string;
  createdBy: string;
  metaInstanceId?: string;
  replacement?: boolean;
}

/** Claim the machine for a new instance: machine Ready → Assigned and the instance Provisioning, together. */
export function assignInstance(machine: Machine, spec: NewInstanceSpec, now: Date): { change: Change; instance: Instance } {
  const at = iso(now);
  const instance: Instance = {
    id: spec.id,
    org: spec.org,
    name: spec.name,
    machineId: machine.id,
    machineType: machine.machineType,
    status: 'Provisioning',
    labels: spec.labels,
    ...(spec.metaInstanceId ? { metaInstanceId: spec.metaInstanceId } : {}),
    ...(spec.replacement ? { replacement: true } : {}),
    createAttempts: 0,
    siteName: spec.name,
    creation: { clientToken: spec.clientToken, phase: 'pending' },
    createdBy: spec.createdBy,
    createdAt: at,
    updatedAt: at,
    version: 0,
  };
  const assigned: Machine = {
    ...machine,
    state: 'Assigned',
    instanceId: instance.id,
    assignedAt: at,
    ...(spec.metaInstanceId ? { boundMetaInstanceId: spec.metaInstanceId } : {}),
    updatedAt: at,
  };
  return {
    instance,
    change: {
      machines: [{ before: machine, after: assigned }],
      instances: [{ before: null, after: instance }],
      history: [
        {
          machineId: machine.id,
          at,
          actor: spec.createdBy,
          action: 'instance-created',
          instanceId: instance.id,
          changes: { state: { from: machine.state, to: 'Assigned' }, instanceId: { to: instance.id } },
        },
      ],
    },
  };
}

const FINISHED: ReadonlySet<Instance['status']> = new Set(['Terminating', 'Terminated', 'Failed']);

export type ReleaseDecision = { kind: 'unchanged'; instance: Instance } | { kind: 'release'; instance: Instance; change: Change };

/**
 * Release: the instance goes Terminating and its machine into Cleanup in the same change, with the health
 * overrides the report calls for, so the machine can never be re-allocated before the site agent has sanitized it
 * and never without its quarantine. Releasing a finished instance changes nothing.
 */
export function releaseInstance(instance: Instance, machine: Machine, report: ReleaseReport, now: Date): ReleaseDecision {
  if (FINISHED.has(instance.status)) return { kind: 'unchanged', instance };
  if (instance.status === 'Repairing' || hasOverride(machine, SOURCES.onlineRepair)) {
    throw conflict('online-repair-active', `instance ${instance.id} is under online repair; disable it before releasing`);
  }
  const at = iso(now);
  const terminating: Instance = { ...instance, status: 'Terminating', updatedAt: at };
  const [cleanup] = startCleanup(machine, instance.id, at);
  // A machine that no longer holds this instance is not this release's to quarantine.
  const edits = cleanup ? releaseOverrideEdits(machine, report, at) : { add: [], remove: [], events: [] };
  const { overrides, history } = applyOverrideEdits(machine, edits, report.actor, at, instance.id);
  const repairLog = cleanup ? logRelease(machine, report, edits, at) : machine.repairLog;
  const cleaned = cleanup && { ...cleanup.after, healthOverrides: overrides, ...(repairLog ? { repairLog } : {}) };
  const validated = cleaned && repairedForValidation(cleaned, report, edits, at);
  const machines = cleaned ? [{ before: machine, after: validated?.machine ?? cleaned }] : [];
  const released: HistoryEntry = {
    machineId: machine.id,
    at,
    actor: report.actor,
    action: report.isRepairTenant ? 'instance-released-by-repair-tenant' : 'instance-released',
    instanceId: instance.id,
    ...(report.issue ? { issue: report.issue } : {}),
    // A tenant's own report opens one of its org's repair tickets (domain/repair/repair-tickets.ts).
    ...(report.issue && !report.isRepairTenant ? { reportingOrg: instance.org } : {}),
    labels: instance.labels,
    ...(report.isRepairTenant ? { message: `repair_status: ${machine.labels.repair_status ?? 'Unknown'}` } : {}),
    changes: { status: { from: instance.status, to: 'Terminating' }, state: { from: machine.state, to: 'Cleanup' } },
  };
  const after = { ...machine, healthOverrides: overrides };
  const events = edits.events.map((type) => repairEvent(type, after, report, at, instance.id, edits.eventDetail));
  return {
    kind: 'release',
    instance: terminating,
    change: {
      instances: [{ before: instance, after: terminating }],
      machines,
      history: [released, ...history, ...events, ...(validated?.history ?? [])],
    },
  };
}

/** A repair completed with nothing new reported: with validation after repair, it is validated before the pool takes it. */
function repairedForValidation(machine: Machine, report: ReleaseReport, edits: OverrideEdits, at: string) {
  const request = report.validateAfterRepair;
  if (!request || !edits.events.includes('RepairCompleted') || edits.add.length > 0) return undefined;
  return withValidationStarted(machine, { id: request.validationId, reason: 'repair', suite: request.suite, actor: report.actor, at });
}

/** Tenant reports and completed repairs go into the machine's repair log, which escalation reads. */
function logRelease(machine: Machine, report: ReleaseReport, edits: { events: string[] }, at: string): RepairLog | undefined {
  if (!report.isRepairTenant && report.issue) return logged(machine.repairLog, { report: { at, issue: report.issue } });
  if (edits.events.includes('RepairCompleted')) return logged(machine.repairLog, { completedAt: at });
  return machine.repairLog;
}

/** How long one create call may take in the worst case, so a crashed caller's claim lapses and the sweep retries. */
export function createLeaseMs(retry: { maxAttempts: number; baseDelayMs: number; timeoutMs: number }): number {
  const delays = (retry.baseDelayMs * (retry.maxAttempts * (retry.maxAttempts - 1))) / 2;
  return retry.maxAttempts * retry.timeoutMs + delays + 5_000;
}

/**
 * Claim sending the site-agent create, while it is still to be sent. A create that went out and whose lease lapsed
 * with no outcome recorded is not sent blindly again: the agent is asked first (claimCreateCheck).
 */
export function claimCreate(instance: Instance, now: Date, leaseMs: number): Change | null {
  if (instance.status !== 'Provisioning' || instance.creation.phase !== 'pending') return null;
  const claimed: Instance = {
    ...instance,
    creation: { clientToken: instance.creation.clientToken, phase: 'in-flight', leaseUntil: iso(addMs(now, leaseMs)) },
    updatedAt: iso(now),
  };
  return { instances: [{ before: instance, after: claimed }], history: [] };
}

/**
 * The create's outcome was lost (its caller crashed, or the answer never came back): claim asking the agent about
 * the instance. The lease is also when to ask again if no answer settles it.
 */
export function claimCreateCheck(instance: Instance, now: Date): Change | null {
  const { creation } = instance;
  if (instance.status !== 'Provisioning' || creation.phase !== 'in-flight' || ageMs(now, creation.leaseUntil) < 0) return null;
  const checks = (creation.checks ?? 0) + 1;
  const claimed: Instance = { ...instance, creation: { ...creation, checks, leaseUntil: iso(addMs(now, statusCheckDelayMs(checks))) }, updatedAt: iso(now) };
  return { instances: [{ before: instance, after: claimed }], history: [] };
}

/**
 * What the agent said about a create whose outcome was lost. Present: the create happened; it is recorded as a
 * success. Absent: it never happened, so it is sent again (same client token). Cleaning, or no answer: wait; the
 * claim's lease already says until when.
 */
export function recordCreateCheck(instance: Instance, machine: Machine, outcome: InstanceStatusOutcome, now: Date): Change | null {
  if (instance.status !== 'Provisioning' || instance.creation.phase !== 'in-flight') return null;
  if (outcome.kind === 'present') return completeCreate(instance, machine, { ok: true, siteName: instance.siteName, attempts: 1 }, now);
  if (outcome.kind !== 'absent') return null;
  const resend: Instance = { ...instance, creation: { clientToken: instance.creation.clientToken, phase: 'pending' }, updatedAt: iso(now) };
  return { instances: [{ before: instance, after: resend }], history: [] };
}

export type CreateOutcome =
  | { ok: true; siteName: string; attempts: number }
  /** `siteName`: the name last sent, which the site may hold (after a 502/504) and the cleanup must delete. */
  | {
      ok: false;
      siteName: string;
      attempts: number;
      reason: string /** How the last attempt ended, for metrics: `timeout`, `network`, `http-502`... */;
      failedWith?: string;
    };

/**
 * Record what the site agent said. Success makes a Provisioning instance Ready; final failure makes it Failed and
 * sends its machine through cleanup back to the pool. An instance released meanwhile keeps Terminating but learns
 * its site name, which the cleanup needs.
 */
export function completeCreate(instance: Instance, machine: Machine, outcome: CreateOutcome, now: Date): Change | null {
  if (instance.creation.phase !== 'in-flight') return null;
  const at = iso(now);
  const base: Instance = {
    ...instance,
    createAttempts: instance.createAttempts + outcome.attempts,
    siteName: outcome.siteName,
    creation: { clientToken: instance.creation.clientToken, phase: 'done' },
    updatedAt: at,
  };
  if (instance.status !== 'Provisioning') return { instances: [{ before: instance, after: base }], history: [] };
  if (outcome.ok) {
    const ready: Instance = { ...base, status: 'Ready' };
    return {
      instances: [{ before: instance, after: ready }],
      history: [
        {
          machineId: machine.id,
          at,
          actor: 'site-agent',
          action: 'instance-ready',
          instanceId: instance.id,
          message: `created as ${outcome.siteName} after ${outcome.attempts} attempt(s)`,
          changes: { status: { from: 'Provisioning', to: 'Ready' } },
        },
      ],
    };
  }
  const failed: Instance = { ...base, status: 'Failed', failureReason: outcome.reason };
  return {
    instances: [{ before: instance, after: failed }],
    machines: startCleanup(machine, instance.id, at),
    history: [
      {
        machineId: machine.id,
        at,
        actor: 'site-agent',
        action: 'instance-create-failed',
        instanceId: instance.id,
        message: outcome.reason,
        changes: { status: { from: 'Provisioning', to: 'Failed' }, state: { from: machine.state, to: 'Cleanup' } },
      },
    ],
  };
}
