import type { Change, Versioned } from '#domain/core/change.ts';
import { maintenanceEvent } from '#domain/maintenance/maintenance-events.ts';
import { COURSE_MESSAGE_MAX, failuresOf, isOpen, type Maintenance, type MaintenanceMachine } from '#domain/maintenance/maintenance.ts';
import type { HealthOverride, HistoryEntry, Machine, InstanceMaintenanceNotice } from '#domain/core/model.ts';
import { buildOverride, withOverride, withoutOverride } from '#domain/core/overrides.ts';
import { addMs, iso } from '#domain/core/time.ts';
import { withValidationStarted } from '#domain/repair/validation.ts';

// What a maintenance does to the machines in scope, one bounded step at a time: waves, the agent's reports and
// completion. The fan-out of the override and the notice is in maintenance-fan-out.ts, what time alone brings
// (deadlines, overdue machines, reminders) in maintenance-deadlines.ts. Every step is a pure function of the
// maintenance and the records it names, and its result is one transaction.

/** The health override source a maintenance writes; it is no tenant's report, so it counts towards no breaker. */
export const MAINTENANCE_SOURCE = 'maintenance';

/** Machines told per step: each writes its machine, its instance and one history entry, beside the maintenance. */
export const FAN_OUT_CHUNK = 30;
/** Orgs told per step (one event each), and events per step of what time alone brings. */
export const ORGS_PER_STEP = 90;

export const ACTOR = 'fleetward-maintenance';

export function maintenanceOverride(maintenance: Maintenance, machineId: string, at: string): HealthOverride {
  return {
    source: MAINTENANCE_SOURCE,
    mode: 'merge',
    alerts: [
      {
        id: 'Maintenance',
        target: machineId,
        message: `maintenance ${maintenance.id} (${maintenance.kind}, ${maintenance.category}): ${maintenance.reason}`,
        classifications: ['PreventAllocations', 'SuppressExternalAlerting'],
      },
    ],
    createdBy: maintenance.declaredBy,
    createdAt: at,
  };
}

/** The maintenance id a machine's override names, if it carries one. */
export function maintenanceIdOf(machine: Machine): string | undefined {
  const alert = machine.healthOverrides.find((o) => o.source === MAINTENANCE_SOURCE)?.alerts[0];
  return alert?.message.match(/^maintenance (\S+) /)?.[1];
}

export const noticeOf = (maintenance: Maintenance, handBackBy: string): InstanceMaintenanceNotice => ({
  id: maintenance.id,
  kind: maintenance.kind,
  category: maintenance.category,
  reason: maintenance.reason,
  ...(maintenance.impact === undefined ? {} : { impact: maintenance.impact }),
  handBackBy,
});

/** One step's write of the maintenance record, guarded by the version it was read at. */
export const step = (maintenance: Maintenance, now: Date, changed: Partial<Maintenance>): Versioned<Maintenance> => ({
  before: maintenance,
  after: { ...maintenance, ...changed, updatedAt: iso(now) },
});

const free = (machine: Machine | undefined): boolean => machine !== undefined && machine.state === 'Ready' && !machine.instanceId && !machine.cleanup;
const inFlight = (maintenance: Maintenance): number =>
  Object.values(maintenance.machines).filter((m) => m.phase === 'in-maintenance' || m.phase === 'validating').length;

/**
 * The next wave: waiting machines that are free, as many as leave fewer than `maxInFlight` in maintenance or
 * validating, in scope order. None while the fan-out is under way or the maintenance is not in progress.
 */
export function admissible(maintenance: Maintenance, machines: Map<string, Machine>): string[] {
  if (maintenance.state !== 'InProgress' || maintenance.progress.fannedOut < maintenance.machineIds.length) return [];
  const room = maintenance.rollout.maxInFlight - inFlight(maintenance);
  if (room <= 0) return [];
  return maintenance.machineIds.filter((id) => maintenance.machines[id]?.phase === 'waiting' && free(machines.get(id))).slice(0, room);
}

/**
 * Admitted machines to ask again: the agent never answered the start before its lease lapsed, or took the work on
 * and never reported it by `reportDueBy`.
 */
export const unansweredStarts = (maintenance: Maintenance, now: Date): string[] =>
  maintenance.machineIds.filter((id) => {
    const m = maintenance.machines[id];
    if (m?.phase !== 'in-maintenance') return false;
    const due = m.accepted ? m.reportDueBy : m.leaseUntil;
    return due !== undefined && due <= iso(now);
  });

/**
 * Admitting machines (or asking again about unanswered ones): `in-maintenance` from now, under a lease; the agent is
 * asked to do the work once this has committed.
 */
export function admit(maintenance: Maintenance, ids: string[], now: Date, leaseMs: number): Change {
  const at = iso(now);
  const leaseUntil = iso(addMs(now, leaseMs));
  const course = { ...maintenance.machines };
  const history: HistoryEntry[] = [];
  for (const id of ids) {
    const { accepted, reportDueBy: _lapsed, ...before } = course[id]!;
    const again = before.phase === 'in-maintenance';
    course[id] = { ...before, phase: 'in-maintenance', startedAt: again ? before.startedAt! : at, leaseUntil };
    if (!again) history.push({ machineId: id, at, actor: ACTOR, action: 'maintenance-started', message: `maintenance ${maintenance.id} started` });
    if (accepted) {
      const message = `maintenance ${maintenance.id}: the work was not reported within ${maintenance.windowMinutes} minutes; the agent is asked again`;
      history.push({ machineId: id, at, actor: ACTOR, action: 'maintenance-asked-again', message });
    }
  }
  return { history, maintenances: [step(maintenance, now, { machines: course })] };
}

/**
 * The agent's answers to the starts: accepted work awaits its report; a refused start fails the machine as a
 * failed report would. Null when nothing changes (the machines moved on meanwhile).
 */
export function settleStarts(maintenance: Maintenance, answers: Array<{ machine: Machine; accepted: boolean; reason?: string }>, now: Date): Change | null {
  let current = maintenance;
  let machines: Versioned<Machine>[] = [];
  let history: HistoryEntry[] = [];
  for (const answer of answers) {
    const course = current.machines[answer.machine.id];
    if (course?.phase !== 'in-maintenance' || course.accepted) continue;
    if (answer.accepted) {
      const { leaseUntil: _settled, ...rest } = course;
      const reportDueBy = iso(addMs(now, maintenance.windowMinutes * 60_000));
      current = { ...current, machines: { ...current.machines, [answer.machine.id]: { ...rest, accepted: true, reportDueBy } } };
      continue;
    }
    const failed = reportWork(current, answer.machine, false, `the site agent refused the work: ${answer.reason ?? 'unknown'}`, now)!;
    current = failed.maintenances![0]!.after;
    machines = [...machines, ...(failed.machines ?? [])];
    history = [...history, ...failed.history];
  }
  if (current === maintenance) return null;
  return { machines, history, maintenances: [{ before: maintenance, after: current }] };
}

/** A validation to start as maintenance work finishes (`[validation] after` names `maintenance`). */
export interface ValidationAfterWork {
  id: string;
  suite: string;
}

/**
 * The one place that decides what follows maintenance work the agent reports done. Without validation the machine
 * is returned: the override comes off and it goes back to the pool. With it, a validation (reason `maintenance`)
 * starts and the machine stays `validating`, still under the maintenance override, until the validation's outcome
 * is on the machine record (validationSettled).
 */
export function maintenanceWorkFinished(
  course: MaintenanceMachine,
  machine: Machine,
  now: Date,
  validation?: ValidationAfterWork,
): { course: MaintenanceMachine; machine: Machine; history: HistoryEntry[] } {
  const at = iso(now);
  if (validation) {
    const started = withValidationStarted(machine, { id: validation.id, reason: 'maintenance', suite: validation.suite, actor: ACTOR, at });
    return { course: { ...course, phase: 'validating', validationId: validation.id }, machine: started.machine, history: started.history };
  }
  return {
    course: { ...course, phase: 'returned', returnedAt: at },
    machine: { ...machine, healthOverrides: withoutOverride(machine.healthOverrides, MAINTENANCE_SOURCE), updatedAt: at },
    history: [],
  };
}

/**
 * The agent's report of one machine's work. Ok finishes it (maintenanceWorkFinished); a failure marks it `failed`
 * and quarantines it as a fault, and the failure that reaches `haltAfterFailures` halts the maintenance. A report
 * for a machine not in maintenance changes nothing (null).
 */
export function reportWork(
  maintenance: Maintenance,
  machine: Machine,
  ok: boolean,
  message: string | undefined,
  now: Date,
  validation?: ValidationAfterWork,
): Change | null {
  const course = maintenance.machines[machine.id];
  if (course?.phase !== 'in-maintenance') return null;
  const at = iso(now);
  if (ok) {
    const finished = maintenanceWorkFinished(course, machine, now, validation);
    const history: HistoryEntry = {
      machineId: machine.id,
      at,
      actor: ACTOR,
      action: 'maintenance-finished',
      message: `maintenance ${maintenance.id} finished`,
    };
    const machines = { ...maintenance.machines, [machine.id]: finished.course };
    return completeIfDone(maintenance, { machines }, now, {
      machines: [{ before: machine, after: finished.machine }],
      history: [history, ...finished.history],
    });
  }
  const summary = `maintenance ${maintenance.id} failed${message ? `: ${message}` : ''}`;
  const quarantine = buildOverride(machine.id, { template: 'tenant-reported-issue', issue: { category: 'HARDWARE', summary }, message: summary }, ACTOR, at);
  const quarantined: Machine = {
    ...machine,
    healthOverrides: withOverride(withoutOverride(machine.healthOverrides, MAINTENANCE_SOURCE), quarantine),
    updatedAt: at,
  };
  return courseFailed(maintenance, { before: machine, after: quarantined }, summary, now, message);
}

/** The course keeps the start of a failure's message (the record holds every machine's); the history keeps it whole. */
const courseMessage = (message: string): string => (message.length > COURSE_MESSAGE_MAX ? `${message.slice(0, COURSE_MESSAGE_MAX - 1)}…` : message);

/** A machine's course failed: counted towards `haltAfterFailures`, and the failure that reaches it halts the maintenance. */
function courseFailed(maintenance: Maintenance, machine: Versioned<Machine>, summary: string, now: Date, message?: string): Change {
  const at = iso(now);
  const id = machine.after.id;
  const failed: MaintenanceMachine = { ...maintenance.machines[id]!, phase: 'failed', returnedAt: at, ...(message ? { message: courseMessage(message) } : {}) };
  const machines = { ...maintenance.machines, [id]: failed };
  const halts = maintenance.state === 'InProgress' && failuresOf({ ...maintenance, machines }) >= maintenance.rollout.haltAfterFailures;
  const history: HistoryEntry[] = [{ machineId: id, at, actor: ACTOR, action: 'maintenance-failed', message: summary }];
  if (halts) history.push(maintenanceEvent('MaintenanceHalted', maintenance, at, { failures: failuresOf({ ...maintenance, machines }) }));
  return completeIfDone(maintenance, { machines, ...(halts ? { state: 'Halted' as const } : {}) }, now, { machines: [machine], history });
}

/**
 * A `validating` machine whose validation has finished, as its record says: passed returns it (the maintenance
 * override comes off), failed fails its course (the validation's own override keeps it quarantined). One machine
 * per step, so that every step stays one small transaction; null when none has finished.
 */
export function validationSettled(maintenance: Maintenance, machines: Map<string, Machine>, now: Date): Change | null {
  for (const id of maintenance.machineIds) {
    const course = maintenance.machines[id];
    const machine = machines.get(id);
    const validation = machine?.validation;
    if (course?.phase !== 'validating' || !machine || validation?.id !== course.validationId || validation?.state === 'running') continue;
    const at = iso(now);
    const released: Machine = { ...machine, healthOverrides: withoutOverride(machine.healthOverrides, MAINTENANCE_SOURCE), updatedAt: at };
    if (validation?.state === 'failed') {
      const summary = `maintenance ${maintenance.id} failed: validation ${validation.id} failed`;
      return courseFailed(maintenance, { before: machine, after: released }, summary, now, `validation ${validation.id} failed`);
    }
    const returned: MaintenanceMachine = { ...course, phase: 'returned', returnedAt: at };
    const history: HistoryEntry = { machineId: id, at, actor: ACTOR, action: 'maintenance-finished', message: `maintenance ${maintenance.id}: validated` };
    return completeIfDone(maintenance, { machines: { ...maintenance.machines, [id]: returned } }, now, {
      machines: [{ before: machine, after: released }],
      history: [history],
    });
  }
  return null;
}

const finished = (m: MaintenanceMachine) => m.phase === 'returned' || m.phase === 'failed';

/** The maintenance as `changed` leaves it, Completed (MaintenanceCompleted) when every machine is returned or failed. */
function completeIfDone(maintenance: Maintenance, changed: Partial<Maintenance>, now: Date, change: Omit<Change, 'maintenances'>): Change {
  const machines = changed.machines ?? maintenance.machines;
  const done = Object.values(machines).every(finished) && maintenance.state !== 'Cancelled';
  if (!done) return { ...change, maintenances: [step(maintenance, now, changed)] };
  const at = iso(now);
  const returned = Object.values(machines).filter((m) => m.phase === 'returned').length;
  const event = maintenanceEvent('MaintenanceCompleted', maintenance, at, { returned, failed: Object.values(machines).length - returned });
  return {
    ...change,
    history: [...change.history, event],
    maintenances: [step(maintenance, now, { ...changed, state: 'Completed', completedAt: at })],
  };
}

/**
 * The machines a step reads: the fan-out's or the unwind's next chunk while one is under way, else every machine
 * whose course may still move (held ones for their hand-back, waiting ones for a wave, admitted ones for the agent).
 */
export function machinesToRead(maintenance: Maintenance): string[] {
  const { fannedOut, unwound } = maintenance.progress;
  if (maintenance.state !== 'Cancelled' && fannedOut < maintenance.machineIds.length) return maintenance.machineIds.slice(fannedOut, fannedOut + FAN_OUT_CHUNK);
  if (maintenance.state === 'Cancelled' && unwound !== undefined && unwound < fannedOut) {
    return maintenance.machineIds.slice(unwound, Math.min(unwound + FAN_OUT_CHUNK, fannedOut));
  }
  if (!isOpen(maintenance)) return [];
  const moving = new Set<MaintenanceMachine['phase']>(['held', 'waiting', 'in-maintenance', 'validating']);
  return maintenance.machineIds.filter((id) => moving.has(maintenance.machines[id]!.phase));
}

/** Whether the asynchronous walk (fan-out, or unwind after a cancel) still has machines to do: it is due at once. */
export const walkPending = (maintenance: Maintenance): boolean =>
  maintenance.state === 'Cancelled'
    ? maintenance.progress.unwound !== undefined && maintenance.progress.unwound < maintenance.progress.fannedOut
    : isOpen(maintenance) && (maintenance.progress.fannedOut < maintenance.machineIds.length || notifyPending(maintenance));

const notifyPending = (maintenance: Maintenance): boolean =>
  Object.values(maintenance.machines).some((m) => m.org !== undefined && !maintenance.notifiedOrgs.includes(m.org));
