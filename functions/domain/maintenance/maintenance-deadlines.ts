import type { Change } from '#domain/core/change.ts';
import { maintenanceEvent, maintenanceMachineEvent } from '#domain/maintenance/maintenance-events.ts';
import { isOpen, orgHandBackBy, type Maintenance, type MaintenanceMachine } from '#domain/maintenance/maintenance.ts';
import { ACTOR, ORGS_PER_STEP, step } from '#domain/maintenance/maintenance-waves.ts';
import { releaseInstance } from '#domain/instances/instances.ts';
import type { HistoryEntry, Instance, Machine } from '#domain/core/model.ts';
import { addMs, iso } from '#domain/core/time.ts';

// What time alone brings to a maintenance: hand-back deadlines enforced, machines overdue, reminders before an
// org's deadline, the resync that stands in for a lost stream record, and when the next of these falls due.

/** Instances released per step at a deadline: each writes its instance, its machine and a few history entries. */
const ENFORCED_PER_STEP = 15;

/** When a machine handed back at `handedBackAt` is overdue: the provider's promised window has passed. */
export const overdueAt = (maintenance: Maintenance, m: MaintenanceMachine): string | undefined =>
  m.handedBackAt && !m.returnedAt && !m.overdue ? iso(addMs(new Date(m.handedBackAt), maintenance.windowMinutes * 60_000)) : undefined;

/** Held past its deadline and not yet released by Fleetward. */
const enforceable = (m: MaintenanceMachine, at: string): boolean => m.phase === 'held' && !m.enforcedAt && m.handBackBy <= at;

/** Held machines whose instance must be read to enforce the deadline. */
export const dueForEnforcement = (maintenance: Maintenance, now: Date): string[] =>
  isOpen(maintenance) ? maintenance.machineIds.filter((id) => enforceable(maintenance.machines[id]!, iso(now))) : [];

/**
 * The deadline passed: Fleetward releases the instances still held (as their tenant's release would, no issue),
 * with terminationReason `maintenance-enforced` and a MaintenanceEnforced each. Null when none is due.
 */
export function enforceStep(maintenance: Maintenance, machines: Map<string, Machine>, instances: Map<string, Instance>, now: Date): Change | null {
  const ids = dueForEnforcement(maintenance, now).slice(0, ENFORCED_PER_STEP);
  if (ids.length === 0) return null;
  const at = iso(now);
  const course = { ...maintenance.machines };
  const changes: Change[] = [];
  for (const id of ids) {
    course[id] = { ...course[id]!, enforcedAt: at };
    const machine = machines.get(id);
    const instance = course[id]!.instanceId ? instances.get(course[id]!.instanceId!) : undefined;
    if (!machine || !instance) continue;
    const report = { actor: ACTOR, isRepairTenant: false, policy: { kind: 'off' as const } };
    const decision = releaseInstance({ ...instance, terminationReason: 'maintenance-enforced' }, machine, report, now);
    if (decision.kind !== 'release') continue;
    const released = decision.change.instances!.map((pair) => ({ ...pair, before: instance }));
    const event = maintenanceEvent('MaintenanceEnforced', maintenance, at, { org: instance.org, instanceId: instance.id, machineId: id });
    changes.push({ ...decision.change, instances: released, history: [...decision.change.history, event] });
  }
  return {
    machines: changes.flatMap((c) => c.machines ?? []),
    instances: changes.flatMap((c) => c.instances ?? []),
    history: changes.flatMap((c) => c.history),
    maintenances: [step(maintenance, now, { machines: course })],
  };
}

/** Overdue and still not back: what the MaintenanceOverdue alarm counts. */
export const isOverdueNow = (m: MaintenanceMachine): boolean => m.overdue && m.phase !== 'returned' && m.phase !== 'failed';

/** When an org must be reminded of its deadline. */
const reminderAt = (maintenance: Maintenance, deadline: string): string => iso(addMs(new Date(deadline), -maintenance.noticeHours * 3_600_000));

const heldOrgs = (maintenance: Maintenance): string[] => [
  ...new Set(
    Object.values(maintenance.machines)
      .filter((m) => m.phase === 'held' && m.org)
      .map((m) => m.org!),
  ),
];

/**
 * What time alone brings: machines that became overdue (MaintenanceOverdue once each, in the maintenance's history
 * and the machine's) and orgs whose reminder is due (MaintenanceHandBackDue once per deadline). Null when nothing.
 */
export function timeStep(maintenance: Maintenance, now: Date): Change | null {
  if (!isOpen(maintenance)) return null;
  const at = iso(now);
  const history: HistoryEntry[] = [];
  const course = { ...maintenance.machines };
  for (const [id, m] of Object.entries(maintenance.machines)) {
    const due = overdueAt(maintenance, m);
    if (!due || due > at) continue;
    course[id] = { ...m, overdue: true };
    const detail = { machineId: id, handedBackAt: m.handedBackAt!, windowMinutes: maintenance.windowMinutes };
    history.push(maintenanceEvent('MaintenanceOverdue', maintenance, at, detail), maintenanceMachineEvent(id, 'MaintenanceOverdue', maintenance, at));
    if (history.length >= ORGS_PER_STEP) break;
  }
  const reminded = [...maintenance.reminded];
  for (const org of heldOrgs(maintenance)) {
    const deadline = orgHandBackBy(maintenance, org)!;
    const key = `${org}#${deadline}`;
    if (reminded.includes(key) || reminderAt(maintenance, deadline) > at || history.length >= ORGS_PER_STEP) continue;
    reminded.push(key);
    history.push(maintenanceEvent('MaintenanceHandBackDue', maintenance, at, { org, handBackBy: deadline }));
  }
  if (history.length === 0) return null;
  return { history, maintenances: [step(maintenance, now, { machines: course, reminded })] };
}

/** Phases that end on a machine's write alone (a release and cleanup, a validation's outcome), which the stream announces. */
const awaitsMachine = new Set<MaintenanceMachine['phase']>(['held', 'waiting', 'validating']);

/**
 * When the maintenance is looked at again though nothing wrote it: while a machine awaits a machine's write, its
 * resync period after the last step or check. A pass then finds what the stream would have told it.
 */
export function resyncAt(maintenance: Maintenance): string | undefined {
  const { resyncSeconds } = maintenance;
  if (resyncSeconds === undefined || !isOpen(maintenance) || !Object.values(maintenance.machines).some((m) => awaitsMachine.has(m.phase))) return undefined;
  const last = maintenance.checkedAt && maintenance.checkedAt > maintenance.updatedAt ? maintenance.checkedAt : maintenance.updatedAt;
  return iso(addMs(new Date(last), resyncSeconds * 1000));
}

/** A pass that found nothing to do at its resync time records so, which moves the next resync on. Null before then. */
export function resyncStep(maintenance: Maintenance, now: Date): Change | null {
  const due = resyncAt(maintenance);
  if (!due || due > iso(now)) return null;
  return { history: [], maintenances: [{ before: maintenance, after: { ...maintenance, checkedAt: iso(now) } }] };
}

/**
 * The next time something falls due on its own: notices left to follow a moved deadline, a deadline, an overdue
 * machine, a reminder, a start or accepted work left unanswered, a resync.
 */
export function nextDueAt(maintenance: Maintenance): string | undefined {
  if (!isOpen(maintenance)) return undefined;
  const times: string[] = [];
  // Notices to follow a moved deadline are due at once, so the sweep finishes them if the stream's pass was lost.
  if (Object.values(maintenance.machines).some((m) => m.renotice)) times.push(maintenance.updatedAt);
  const resync = resyncAt(maintenance);
  if (resync) times.push(resync);
  for (const m of Object.values(maintenance.machines)) {
    const due = overdueAt(maintenance, m);
    if (due) times.push(due);
  }
  for (const m of Object.values(maintenance.machines)) {
    const unanswered = m.accepted ? m.reportDueBy : m.leaseUntil;
    if (m.phase === 'in-maintenance' && unanswered) times.push(unanswered);
  }
  for (const m of Object.values(maintenance.machines)) if (m.phase === 'held' && !m.enforcedAt) times.push(m.handBackBy);
  for (const org of heldOrgs(maintenance)) {
    const deadline = orgHandBackBy(maintenance, org)!;
    if (!maintenance.reminded.includes(`${org}#${deadline}`)) times.push(reminderAt(maintenance, deadline));
  }
  return times.sort()[0];
}
