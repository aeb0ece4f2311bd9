import { conflict, Rejection, unprocessable } from '#domain/core/rejection.ts';
import { addMs, iso } from '#domain/core/time.ts';
import type { maintenanceCategories, maintenanceKinds, maintenanceStates } from '#domain/core/vocabulary.ts';
import type { Versioned } from '#domain/core/change.ts';

// Declared maintenance (API.md "Maintenance"): the record and the rules of declaring, deferring, cancelling and
// resuming it. What happens to each machine in scope (fan-out, waves, reports, overdue) is maintenance-waves.ts.

export const machinePhases = ['held', 'waiting', 'in-maintenance', 'validating', 'returned', 'failed'] as const;

export type MaintenanceKind = (typeof maintenanceKinds)[number];
export type MaintenanceCategory = (typeof maintenanceCategories)[number];
export type MaintenanceState = (typeof maintenanceStates)[number];
export type MachinePhase = (typeof machinePhases)[number];

/**
 * The most machines one maintenance may cover: every machine's course lives in its one record, which must fit one
 * DynamoDB item (400 KB). How many fit depends on the machine ids: the declaration checks the record at its fullest
 * (`atItsFullest`), and this bounds the names a scope may resolve to before that.
 */
export const MAX_MAINTENANCE_MACHINES = 2_000;
/** A failed course keeps this much of its message; the machine's history keeps all of it. */
export const COURSE_MESSAGE_MAX = 120;
/** The longest org name (domain/core/schemas.ts) and the length of a generated id (`i-` and 16 characters). */
const LONGEST_ORG = 64;
const GENERATED_ID = 18;

export interface MaintenanceScope {
  machineIds?: string[] | undefined;
  racks?: string[] | undefined;
  nvlinkDomains?: string[] | undefined;
}

/** One machine's course through a maintenance. */
export interface MaintenanceMachine {
  phase: MachinePhase;
  org?: string;
  instanceId?: string;
  handBackBy: string;
  handedBackAt?: string;
  startedAt?: string;
  returnedAt?: string;
  overdue: boolean;
  message?: string;
  /** While the agent's start is unanswered: after this, it is asked again (a crash lost the call or its answer). */
  leaseUntil?: string;
  /** The agent took the work on: its report is awaited. */
  accepted?: boolean;
  /**
   * Accepted work unreported by then (a window after the agent took it) is asked for again: a crash of the agent, or
   * of the controller while the agent reported, may have lost the work or its report.
   */
  reportDueBy?: string;
  /** The validation started when the work finished (phase `validating`): its outcome on the machine decides. */
  validationId?: string;
  /** Its deadline passed while held: Fleetward released the instance then. */
  enforcedAt?: string;
  /**
   * Its `handBackBy` moved (an accepted deferral) and the notice on its instance still names the old one: the
   * maintenance's walk rewrites the notice, a chunk of machines a step (maintenance-fan-out.ts `renoticeStep`).
   */
  renotice?: true;
}

export interface Deferral {
  org: string;
  until: string;
  reason: string;
  state: 'requested' | 'accepted' | 'rejected';
  decidedBy?: string;
}

export interface Rollout {
  maxInFlight: number;
  haltAfterFailures: number;
}

export interface Maintenance {
  id: string;
  kind: MaintenanceKind;
  category: MaintenanceCategory;
  reason: string;
  impact?: string;
  scope: MaintenanceScope;
  machineIds: string[];
  handBackBy: string;
  windowMinutes: number;
  rollout: Rollout;
  /** `[maintenance] notice_hours` when it was declared: how long before an org's deadline the reminder goes out. */
  noticeHours: number;
  /**
   * `[maintenance] resync_seconds` when it was declared: while machines wait on something only a machine's write
   * announces (a hand-back, a free machine, a finished validation), the maintenance is due this long after its last
   * step, so a lost stream record delays that step by this much at most. Absent in a record declared before there
   * was a resync: that one has none.
   */
  resyncSeconds?: number;
  /** When a pass last found nothing to do: the next resync counts from here (or from `updatedAt`, if later). */
  checkedAt?: string;
  state: MaintenanceState;
  machines: Record<string, MaintenanceMachine>;
  deferrals: Deferral[];
  /**
   * How far the asynchronous walk over `machineIds` has come: machines before `fannedOut` carry the override (and
   * their instances the notice); after a cancel, machines before `unwound` no longer do.
   */
  progress: { fannedOut: number; unwound?: number };
  /** Orgs told already: `<org>#<handBackBy>` for the reminder, so a deferral's new deadline is reminded again. */
  reminded: string[];
  /** Orgs whose MaintenanceDeclared went out. */
  notifiedOrgs: string[];
  declaredBy: string;
  createdAt: string;
  updatedAt: string;
  completedAt?: string;
  version: number;
}

/** The site's open maintenance, one item: every declaration commits against it, so two never overlap unseen. */
export interface OpenMaintenances {
  ids: string[];
  version: number;
}

/** A change of one maintenance with the open list brought along when the maintenance joins or leaves it. */
export function withOpenList<C extends { maintenances?: Array<{ before: Maintenance | null; after: Maintenance }>; openMaintenances?: unknown }>(
  change: C,
  open: OpenMaintenances | null,
): C {
  const pair = change.maintenances?.[0];
  const next = pair ? openListAfter(open, pair.after) : null;
  return next ? { ...change, openMaintenances: { before: open, after: next } } : change;
}

/** The open list after a change of one maintenance: it joins when declared and leaves once Completed or Cancelled. */
export function openListAfter(open: OpenMaintenances | null, after: Maintenance): OpenMaintenances | null {
  const ids = open?.ids ?? [];
  const listed = ids.includes(after.id);
  if (isOpen(after) === listed) return null;
  return { ids: isOpen(after) ? [...ids, after.id] : ids.filter((id) => id !== after.id), version: open?.version ?? 0 };
}

export interface MaintenanceRules {
  minHandBackDays: number;
  emergencyMinHandBackMinutes: number;
  noticeHours: number;
  resyncSeconds: number;
}

export interface DeclareRequest {
  kind: MaintenanceKind;
  category: MaintenanceCategory;
  reason: string;
  impact?: string | undefined;
  scope: MaintenanceScope;
  handBackBy: string;
  windowMinutes: number;
  rollout?: Partial<Rollout> | undefined;
}

/** What the scope's names were matched against: the machines found by id, in the racks, or in the NVLink domains. */
export interface ScopeCandidate {
  id: string;
  rack: string;
  nvlinkDomain?: string | undefined;
}

const OPEN: readonly MaintenanceState[] = ['Declared', 'InProgress', 'Halted'];
export const isOpen = (maintenance: Maintenance): boolean => OPEN.includes(maintenance.state);

const missing = (asked: string[] | undefined, found: Set<string>): string[] => (asked ?? []).filter((name) => !found.has(name));

/**
 * The machines a scope names, each once, in the order named. Every name must match: an unknown machine, rack or
 * NVLink domain is a 422 naming them, and so is a scope that resolves to nothing.
 */
export function resolveScope(scope: MaintenanceScope, candidates: ScopeCandidate[]): string[] {
  const unknown = [
    ...missing(scope.machineIds, new Set(candidates.map((c) => c.id))).map((id) => `machine ${id}`),
    ...missing(scope.racks, new Set(candidates.map((c) => c.rack))).map((rack) => `rack ${rack}`),
    ...missing(scope.nvlinkDomains, new Set(candidates.flatMap((c) => (c.nvlinkDomain ? [c.nvlinkDomain] : [])))).map((d) => `NVLink domain ${d}`),
  ];
  if (unknown.length > 0) throw unprocessable('unknown-scope', `the scope names what the site does not have: ${unknown.join(', ')}`);
  const ids = new Set(scope.machineIds ?? []);
  const racks = new Set(scope.racks ?? []);
  const domains = new Set(scope.nvlinkDomains ?? []);
  const inScope = candidates.filter((c) => ids.has(c.id) || racks.has(c.rack) || (c.nvlinkDomain !== undefined && domains.has(c.nvlinkDomain)));
  const resolved = [...new Set(inScope.map((c) => c.id))];
  if (resolved.length === 0) throw unprocessable('empty-scope', 'the scope resolves to no machine');
  if (resolved.length > MAX_MAINTENANCE_MACHINES) {
    throw unprocessable('scope-too-large', `the scope resolves to ${resolved.length} machines; one maintenance covers at most ${MAX_MAINTENANCE_MACHINES}`);
  }
  return resolved;
}

/** The soonest deadline a maintenance of this kind may set. */
export function earliestHandBack(kind: MaintenanceKind, now: Date, rules: MaintenanceRules): Date {
  const minutes = kind === 'planned' ? rules.minHandBackDays * 24 * 60 : rules.emergencyMinHandBackMinutes;
  return addMs(now, minutes * 60_000);
}

/** A machine is in at most one open maintenance: 409 naming the machines another one covers already. */
export function checkOverlap(machineIds: string[], open: Maintenance[]): void {
  const taken = new Map<string, string>();
  for (const other of open.filter(isOpen)) for (const id of other.machineIds) taken.set(id, other.id);
  const overlapping = machineIds.filter((id) => taken.has(id));
  if (overlapping.length === 0) return;
  const named = overlapping.slice(0, 20).map((id) => `${id} (${taken.get(id)})`);
  const more = overlapping.length > named.length ? ` and ${overlapping.length - named.length} more` : '';
  throw conflict('maintenance-overlap', `machines already in open maintenance: ${named.join(', ')}${more}`);
}

/** A new maintenance, recorded as declared: the machines in scope are told asynchronously (maintenance-waves.ts). */
export function declareMaintenance(
  id: string,
  request: DeclareRequest,
  machineIds: string[],
  open: Maintenance[],
  declaredBy: string,
  now: Date,
  rules: MaintenanceRules,
): Maintenance {
  const earliest = earliestHandBack(request.kind, now, rules);
  if (Date.parse(request.handBackBy) < earliest.getTime()) {
    const rule = request.kind === 'planned' ? `${rules.minHandBackDays} days` : `${rules.emergencyMinHandBackMinutes} minutes`;
    throw unprocessable('hand-back-too-soon', `${request.kind} maintenance gives tenants at least ${rule}: handBackBy must be at or after ${iso(earliest)}`);
  }
  checkOverlap(machineIds, open);
  const handBackBy = iso(new Date(request.handBackBy));
  const at = iso(now);
  return {
    id,
    kind: request.kind,
    category: request.category,
    reason: request.reason,
    ...(request.impact === undefined ? {} : { impact: request.impact }),
    scope: request.scope,
    machineIds,
    handBackBy,
    windowMinutes: request.windowMinutes,
    rollout: { maxInFlight: request.rollout?.maxInFlight ?? machineIds.length, haltAfterFailures: request.rollout?.haltAfterFailures ?? 1 },
    noticeHours: rules.noticeHours,
    resyncSeconds: rules.resyncSeconds,
    state: 'Declared',
    machines: Object.fromEntries(machineIds.map((machineId) => [machineId, { phase: 'waiting', handBackBy, overdue: false }])),
    deferrals: [],
    progress: { fannedOut: 0 },
    reminded: [],
    notifiedOrgs: [],
    declaredBy,
    createdAt: at,
    updatedAt: at,
    version: 0,
  };
}

/**
 * The record as large as its course can make it: every machine handed back by an org of the longest name, started,
 * validated, returned and enforced, each with every time set, and as many failure messages as halt it. What a
 * declaration must fit into one item from the start, since no later step may be refused for its size.
 */
export function atItsFullest(maintenance: Maintenance): Maintenance {
  const at = maintenance.handBackBy;
  const course: MaintenanceMachine = {
    phase: 'in-maintenance',
    org: 'o'.repeat(LONGEST_ORG),
    instanceId: 'i'.repeat(GENERATED_ID),
    handBackBy: at,
    handedBackAt: at,
    startedAt: at,
    returnedAt: at,
    enforcedAt: at,
    overdue: true,
    accepted: true,
    validationId: 'v'.repeat(GENERATED_ID),
    renotice: true,
  };
  const failing = new Set(maintenance.machineIds.slice(0, maintenance.rollout.haltAfterFailures));
  const machines = Object.fromEntries(
    maintenance.machineIds.map((id) => [id, failing.has(id) ? { ...course, message: 'm'.repeat(COURSE_MESSAGE_MAX) } : course]),
  );
  return { ...maintenance, machines, checkedAt: at, completedAt: at };
}

const invalidState = (maintenance: Maintenance, action: string) =>
  conflict('invalid-state', `maintenance ${maintenance.id} is ${maintenance.state}: it cannot be ${action}`);

/**
 * Cancelling stops admitting machines. Those not yet admitted lose the override and their instances the notice (an
 * asynchronous walk, `progress.unwound`); those already admitted finish their wave.
 */
export function cancelMaintenance(maintenance: Maintenance, now: Date): Maintenance {
  if (!isOpen(maintenance)) throw invalidState(maintenance, 'cancelled');
  return { ...maintenance, state: 'Cancelled', progress: { ...maintenance.progress, unwound: 0 }, updatedAt: iso(now) };
}

/** A halted maintenance admits machines again; the failures so far stay counted, so the next one halts it again. */
export function resumeMaintenance(maintenance: Maintenance, now: Date): Maintenance {
  if (maintenance.state !== 'Halted') throw invalidState(maintenance, 'resumed');
  return {
    ...maintenance,
    state: 'InProgress',
    rollout: { ...maintenance.rollout, haltAfterFailures: failuresOf(maintenance) + maintenance.rollout.haltAfterFailures },
    updatedAt: iso(now),
  };
}

export const failuresOf = (maintenance: Maintenance): number => Object.values(maintenance.machines).filter((m) => m.phase === 'failed').length;

/** The machines of one org in a maintenance: those its instances were on when the notice reached them. */
export const machinesOfOrg = (maintenance: Maintenance, org: string): string[] =>
  Object.entries(maintenance.machines)
    .filter(([, m]) => m.org === org)
    .map(([id]) => id);

/** An org's deadline: the earliest of its machines still held (an accepted deferral moved them all). */
export function orgHandBackBy(maintenance: Maintenance, org: string): string | undefined {
  const times = machinesOfOrg(maintenance, org)
    .map((id) => maintenance.machines[id]!)
    .filter((m) => m.phase === 'held')
    .map((m) => m.handBackBy)
    .sort();
  return times[0];
}

/**
 * The deadline an org is held to: that of its machines still held, or once it holds none, the deferral it was
 * granted, or the maintenance's own.
 */
export function orgDeadline(maintenance: Maintenance, org: string): string {
  const granted = maintenance.deferrals.find((d) => d.org === org && d.state === 'accepted');
  return orgHandBackBy(maintenance, org) ?? granted?.until ?? maintenance.handBackBy;
}

/** A tenant asks for more time: one request per org at a time; never for emergency maintenance. */
export function requestDeferral(maintenance: Maintenance, org: string, until: string, reason: string, now: Date): Maintenance {
  if (maintenance.kind === 'emergency') throw conflict('deferral-not-allowed', `maintenance ${maintenance.id} is an emergency: it cannot be deferred`);
  if (!isOpen(maintenance)) throw invalidState(maintenance, 'deferred');
  const deadline = orgHandBackBy(maintenance, org);
  if (!deadline) throw conflict('nothing-held', `org ${org} holds no machine in maintenance ${maintenance.id}`);
  if (Date.parse(until) <= Date.parse(deadline)) throw unprocessable('deferral-too-short', `until must be after the current deadline ${deadline}`);
  const deferral: Deferral = { org, until: iso(new Date(until)), reason, state: 'requested' };
  return { ...maintenance, deferrals: [...maintenance.deferrals.filter((d) => d.org !== org), deferral], updatedAt: iso(now) };
}

/**
 * The provider decides an org's deferral; accepting moves that org's held machines' deadline to `until` and marks
 * them for their instances' notices to follow. The answer writes this record alone, however many instances the org
 * holds: the maintenance's walk takes the notices on from there.
 */
export function decideDeferral(maintenance: Maintenance, org: string, decision: 'accept' | 'reject', decidedBy: string, now: Date): Maintenance {
  const deferral = maintenance.deferrals.find((d) => d.org === org);
  if (!deferral) throw new Rejection(404, 'not-found', `org ${org} asked for no deferral of maintenance ${maintenance.id}`);
  if (deferral.state !== 'requested') throw conflict('invalid-state', `the deferral of org ${org} was ${deferral.state} already`);
  const decided: Deferral = { ...deferral, state: decision === 'accept' ? 'accepted' : 'rejected', decidedBy };
  const machines =
    decision === 'accept'
      ? Object.fromEntries(
          Object.entries(maintenance.machines).map(([id, m]): [string, MaintenanceMachine] => [
            id,
            m.org === org && m.phase === 'held' ? { ...m, handBackBy: deferral.until, renotice: true } : m,
          ]),
        )
      : maintenance.machines;
  return { ...maintenance, machines, deferrals: maintenance.deferrals.map((d) => (d.org === org ? decided : d)), updatedAt: iso(now) };
}

// What a Change carries of this file's records (core/change.ts).
declare module '#domain/core/change.ts' {
  interface Change {
    /** Declared maintenance, and the site's list of open ones that declarations commit against. */
    maintenances?: Versioned<Maintenance>[];
    openMaintenances?: Versioned<OpenMaintenances>;
  }
}
