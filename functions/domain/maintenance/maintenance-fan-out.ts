import type { Change, Versioned } from '#domain/core/change.ts';
import { maintenanceEvent } from '#domain/maintenance/maintenance-events.ts';
import { orgHandBackBy, type Maintenance, type MaintenanceMachine } from '#domain/maintenance/maintenance.ts';
import {
  ACTOR,
  FAN_OUT_CHUNK,
  MAINTENANCE_SOURCE,
  maintenanceIdOf,
  maintenanceOverride,
  noticeOf,
  ORGS_PER_STEP,
  step,
} from '#domain/maintenance/maintenance-waves.ts';
import type { HistoryEntry, Instance, Machine } from '#domain/core/model.ts';
import { withOverride, withoutOverride } from '#domain/core/overrides.ts';
import { iso } from '#domain/core/time.ts';

// A maintenance's walk over its scope, a chunk per step so that a rack or a domain of any size is never one request:
// the override on each machine and the notice on each instance held there, then each org told once; after a cancel,
// the same walk undone. Machines handed back by their tenants move on from `held` here too.

const holds = (machine: Machine, instance: Instance | undefined): instance is Instance =>
  machine.state === 'Assigned' && instance !== undefined && instance.machineId === machine.id && instance.status !== 'Terminated';

/**
 * The next chunk of the fan-out: each machine gets the override, each instance on one the notice, and the machine
 * is `held` (by that instance's org) or `waiting` (free, or already on its way back). When every machine is told,
 * the orgs are told, an event per org, a chunk of orgs per step. Null when the fan-out is done.
 */
export function fanOutStep(maintenance: Maintenance, chunk: Map<string, Machine>, instances: Map<string, Instance>, now: Date): Change | null {
  if (maintenance.state === 'Cancelled') return null;
  const at = iso(now);
  const from = maintenance.progress.fannedOut;
  const ids = maintenance.machineIds.slice(from, from + FAN_OUT_CHUNK);
  if (ids.length === 0) return notifyOrgs(maintenance, now);
  const machines: Versioned<Machine>[] = [];
  const touched: Versioned<Instance>[] = [];
  const history: HistoryEntry[] = [];
  const course: Record<string, MaintenanceMachine> = { ...maintenance.machines };
  for (const id of ids) {
    const machine = chunk.get(id);
    // A machine deregistered since the declaration has nothing to be done to it.
    if (!machine) {
      course[id] = { ...course[id]!, phase: 'returned', returnedAt: at };
      continue;
    }
    const instance = machine.instanceId ? instances.get(machine.instanceId) : undefined;
    const after: Machine = { ...machine, healthOverrides: withOverride(machine.healthOverrides, maintenanceOverride(maintenance, id, at)), updatedAt: at };
    machines.push({ before: machine, after });
    if (holds(machine, instance)) {
      course[id] = { ...course[id]!, phase: 'held', org: instance.org, instanceId: instance.id };
      touched.push({ before: instance, after: { ...instance, maintenance: noticeOf(maintenance, course[id]!.handBackBy), updatedAt: at } });
    } else {
      course[id] = { ...course[id]!, phase: 'waiting', handedBackAt: at };
    }
    history.push({ machineId: id, at, actor: ACTOR, action: 'maintenance-declared', message: `in scope of maintenance ${maintenance.id}` });
  }
  const progress = { ...maintenance.progress, fannedOut: from + ids.length };
  const state = maintenance.state === 'Declared' ? 'InProgress' : maintenance.state;
  return { machines, instances: touched, history, maintenances: [step(maintenance, now, { machines: course, progress, state })] };
}

/** Orgs holding machines in scope, each told once (MaintenanceDeclared listing its instance ids). */
function notifyOrgs(maintenance: Maintenance, now: Date): Change | null {
  const byOrg = new Map<string, string[]>();
  for (const m of Object.values(maintenance.machines)) {
    if (!m.org || !m.instanceId || maintenance.notifiedOrgs.includes(m.org)) continue;
    byOrg.set(m.org, [...(byOrg.get(m.org) ?? []), m.instanceId]);
  }
  const orgs = [...byOrg.keys()].sort().slice(0, ORGS_PER_STEP);
  if (orgs.length === 0) return null;
  const at = iso(now);
  const history = orgs.map((org) =>
    maintenanceEvent('MaintenanceDeclared', maintenance, at, {
      org,
      instanceIds: byOrg.get(org)!,
      handBackBy: orgHandBackBy(maintenance, org) ?? maintenance.handBackBy,
    }),
  );
  return { history, maintenances: [step(maintenance, now, { notifiedOrgs: [...maintenance.notifiedOrgs, ...orgs] })] };
}

/**
 * After a cancel: the next chunk of machines not yet admitted loses the override, their instances the notice. Null
 * when every one is done.
 */
export function unwindStep(maintenance: Maintenance, chunk: Map<string, Machine>, instances: Map<string, Instance>, now: Date): Change | null {
  const from = maintenance.progress.unwound;
  if (maintenance.state !== 'Cancelled' || from === undefined) return null;
  const ids = maintenance.machineIds.slice(from, Math.min(from + FAN_OUT_CHUNK, maintenance.progress.fannedOut));
  if (ids.length === 0) return null;
  const at = iso(now);
  const machines: Versioned<Machine>[] = [];
  const touched: Versioned<Instance>[] = [];
  const history: HistoryEntry[] = [];
  for (const id of ids) {
    const phase = maintenance.machines[id]?.phase;
    const machine = chunk.get(id);
    if (!machine || (phase !== 'held' && phase !== 'waiting') || maintenanceIdOf(machine) !== maintenance.id) continue;
    machines.push({ before: machine, after: { ...machine, healthOverrides: withoutOverride(machine.healthOverrides, MAINTENANCE_SOURCE), updatedAt: at } });
    const instance = machine.instanceId ? instances.get(machine.instanceId) : undefined;
    if (instance?.maintenance?.id === maintenance.id) {
      const { maintenance: _cleared, ...rest } = instance;
      touched.push({ before: instance, after: { ...rest, updatedAt: at } });
    }
    history.push({ machineId: id, at, actor: ACTOR, action: 'maintenance-cancelled', message: `maintenance ${maintenance.id} was cancelled` });
  }
  return {
    machines,
    instances: touched,
    history,
    maintenances: [step(maintenance, now, { progress: { ...maintenance.progress, unwound: from + ids.length } })],
  };
}

/**
 * A machine in scope that its tenant released and that finished cleanup is free: `held` becomes `waiting`, handed
 * back now. `machines` are those read for the step, by id.
 */
export function handedBack(maintenance: Maintenance, machines: Map<string, Machine>, now: Date): Record<string, MaintenanceMachine> | null {
  let changed = false;
  const course = { ...maintenance.machines };
  for (const [id, m] of Object.entries(maintenance.machines)) {
    const machine = machines.get(id);
    if (m.phase !== 'held' || !machine || machine.instanceId === m.instanceId) continue;
    course[id] = { ...m, phase: 'waiting', handedBackAt: iso(now) };
    changed = true;
  }
  return changed ? course : null;
}

/** The machines whose instance's notice must follow a moved deadline, the next chunk of them. */
export const renoticeChunk = (maintenance: Maintenance): string[] =>
  maintenance.machineIds.filter((id) => maintenance.machines[id]?.renotice).slice(0, FAN_OUT_CHUNK);

/**
 * After an accepted deferral: the next chunk of the org's machines gets its instance's notice rewritten with the
 * machine's new deadline, and loses its mark, in one transaction with the maintenance record. A machine handed back
 * meanwhile, or an instance gone, loses its mark alone. Null when no machine is marked.
 */
export function renoticeStep(maintenance: Maintenance, instances: Map<string, Instance>, now: Date): Change | null {
  const ids = renoticeChunk(maintenance);
  if (ids.length === 0) return null;
  const at = iso(now);
  const course: Record<string, MaintenanceMachine> = { ...maintenance.machines };
  const touched: Versioned<Instance>[] = [];
  for (const id of ids) {
    const { renotice: _followed, ...m } = course[id]!;
    course[id] = m;
    const instance = m.instanceId ? instances.get(m.instanceId) : undefined;
    if (m.phase !== 'held' || !instance || instance.status === 'Terminated' || instance.maintenance?.id !== maintenance.id) continue;
    if (instance.maintenance.handBackBy === m.handBackBy) continue;
    touched.push({ before: instance, after: { ...instance, maintenance: noticeOf(maintenance, m.handBackBy), updatedAt: at } });
  }
  return { instances: touched, history: [], maintenances: [step(maintenance, now, { machines: course })] };
}
