import type { HealthAlert, HealthOverride, Issue } from '#domain/core/responses.ts';
import type { maintenanceCategories, maintenanceKinds, powerStates, replacementReasons, validationReasons } from '#domain/core/vocabulary.ts';
import type { powerActions } from '#site/agent-contract.ts';

// The records Fleetward keeps. Pure data: the store maps them to DynamoDB items, the API to JSON.

export type Role = 'tenant' | 'provider-admin' | 'site-agent';

export interface Principal {
  sub: string;
  org: string;
  roles: Role[];
}

export type MachineState = 'Ready' | 'Assigned' | 'Cleanup';

// The API's shapes that records hold as they are: one definition, the response schema's.
export type { HealthAlert, HealthOverride, HistoryEntry, Issue } from '#domain/core/responses.ts';
export type Classification = HealthAlert['classifications'][number];
export type IssueCategory = Issue['category'];

/** Where the machine is in handing its last instance back to the site agent. */
export interface MachineCleanup {
  instanceId: string;
  /** pending: the agent's DELETE is still to be sent; requested: sent, awaiting the agent's report; failed: the agent reported a failed cleanup. */
  phase: 'pending' | 'requested' | 'failed';
  /** While a DELETE is in flight, nobody else sends one until this passes. */
  leaseUntil?: string;
  attempts: number;
  error?: string;
  /** The agent accepted the DELETE: its report is awaited until `leaseUntil`, then the agent is asked (domain/instances/status-checks.ts). */
  accepted?: boolean;
  /** Status questions asked since the DELETE was accepted: the backoff of the next one. */
  checks?: number;
}

export interface Machine {
  id: string;
  machineType: string;
  rack: string;
  /** The NVLink domain it shares GPU memory fabric with (a GB200 NVL72 rack's 18 trays are one), when it has one. */
  nvlinkDomain?: string;
  state: MachineState;
  instanceId?: string;
  /** The reservation that holds it for one org, while one does. */
  reservation?: { id: string; org: string };
  labels: Record<string, string>;
  healthOverrides: HealthOverride[];
  /** Last time the site agent saw it, when known individually (see domain/machines/heartbeat.ts). */
  lastHeartbeatAt?: string;
  /** True while the machine is in the site agent's latest heartbeat roster. */
  heartbeatLive: boolean;
  /** While out of the roster: when its heartbeat counts as stale. */
  heartbeatStaleAt?: string;
  cleanup?: MachineCleanup;
  /** Recent tenant reports and completed repairs, for recurring-fault escalation. */
  repairLog?: RepairLog;
  /** The meta-instance its current instance belongs to: its failures are that reconciler's to find. */
  boundMetaInstanceId?: string;
  /** When its current instance was assigned: a repair tenant's claim starts the in-repair clock. */
  assignedAt?: string;
  /** The stuck-repair episode already alerted (`<stage>#<since>`), so RepairStuck is emitted once per episode. */
  stuckAlerted?: string;
  /** The API request that last changed it (stamped by the store on that request's behalf; see domain/core/request-id.ts). */
  lastRequestId?: string;
  /**
   * Who registered it, and as what. Its history's first entry is read from here rather than stored, so that
   * registering 10,000 machines writes 10,000 items, not 20,000. Machines registered before that have no such
   * record and a stored `machine-registered` entry instead.
   */
  registered?: { by: string; machineType: string; rack: string; nvlinkDomain?: string };
  /** The site agent's latest validation of it (domain/repair/validation.ts): while running, it keeps out of allocation. */
  validation?: MachineValidation;
  /** Taken out for good by a provider: never allocated again (domain/machines/retirement.ts). */
  retired?: Retirement;
  version: number;
  createdAt: string;
  updatedAt: string;
}

export type InstanceStatus = 'Provisioning' | 'Ready' | 'Repairing' | 'Terminating' | 'Terminated' | 'Failed';

/** The create call to the site agent: claimed under a lease so a duplicated trigger never sends a second create. */
export interface InstanceCreation {
  clientToken: string;
  phase: 'pending' | 'in-flight' | 'done';
  leaseUntil?: string;
  /** Status questions asked since an in-flight create's lease lapsed with no outcome recorded (domain/instances/status-checks.ts). */
  checks?: number;
}

export interface Instance {
  id: string;
  org: string;
  name: string;
  machineId: string;
  machineType: string;
  status: InstanceStatus;
  labels: Record<string, string>;
  metaInstanceId?: string;
  createAttempts: number;
  siteName: string;
  failureReason?: string;
  /** Why Fleetward ended it rather than its tenant: `maintenance-enforced` (its maintenance's deadline passed). */
  terminationReason?: string;
  /** Set once this member's failure has been counted against its meta-instance. */
  metaFailureCounted?: boolean;
  /** Placed to replace a failed meta-instance member: counts against the site's replacement cap while Provisioning. */
  replacement?: boolean;
  creation: InstanceCreation;
  /** The open maintenance of its machine: the tenant must hand it back by the notice's deadline. */
  maintenance?: InstanceMaintenanceNotice;
  /** The tenant's latest power action and where it stands (domain/instances/power.ts). */
  power?: InstancePower;
  /** The API request that last changed it (stamped by the store on that request's behalf; see domain/core/request-id.ts). */
  lastRequestId?: string;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
  version: number;
  /**
   * Written by release 0.1.0, before quotas: its org's usage counter does not count it yet. The migration to 0.2.0
   * counts it (store/migrations), and so does any change that writes it first: its `before` then counts nothing.
   */
  usageUncounted?: true;
  /** The counter shard of its org's usage this instance is counted in (domain/reservations/quota-shards.ts); absent, shard 0. */
  usageShard?: number;
}

export interface Tenant {
  org: string;
  capabilities: { targetedInstanceCreation: boolean };
  /** Most machines of each type the org's instances may hold at once (domain/reservations/quotas.ts); a type not named has no quota. */
  quotas?: Record<string, number>;
  updatedAt: string;
  version: number;
}

/** Injected so tests can run a 30 s heartbeat timeout or a 24 h SLA in milliseconds. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export interface IdSource {
  next(prefix: string): string;
}

/** Where a meta-instance's members must be together: one rack, one NVLink domain (absent: false). */
export interface Placement {
  sameRack: boolean;
  sameNvlinkDomain?: boolean;
}

export type MetaInstanceStatus = 'Placing' | 'Ready' | 'Retrying' | 'Deleting' | 'Deleted';

/** "Keep N machines of this type for me": desired state plus the status the reconcilers keep. */
/**
 * The meta-instance replacements placed site-wide and not yet seen past Provisioning: what the cap
 * (`max_replacements_in_flight`) counts. One record, so the count is exact; each placement of replacements adds to it
 * in its own transaction, guarded by its version, and drops those it reads as finished.
 */
export interface ReplacementsInFlight {
  instanceIds: string[];
  version: number;
}

export interface MetaInstance {
  id: string;
  org: string;
  machineType: string;
  minNodes: number;
  /** Pinned machines: required members, never silently substituted. */
  machineIds?: string[];
  placement: Placement;
  labels: Record<string, string>;
  status: MetaInstanceStatus;
  consecutiveFailures: number;
  lastFailureError?: string;
  placementError?: string;
  nextAttemptAt?: string;
  /** Since when it waits for machines: meta-instances waiting for the same type are served in this order. */
  waitingSince?: string;
  /**
   * Its membership: every instance placed for it and not yet seen Terminated. Added in the transaction that creates
   * the instance and dropped once a pass reads it Terminated, so what it holds never depends on an index.
   */
  memberIds: string[];
  /** Members being replaced, on the tenant's request or for declared maintenance (domain/meta-instances/member-replacement.ts). */
  memberReplacements?: MemberReplacement[];
  /** The API request that last changed it (stamped by the store on that request's behalf; see domain/core/request-id.ts). */
  lastRequestId?: string;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
  version: number;
}

// The parts of the records above that a capability keeps: here, so the records name them without depending on the
// capability that decides them.

/** What an instance on a machine in a declared maintenance's scope carries in every view (maintenance/). */
export interface InstanceMaintenanceNotice {
  id: string;
  kind: (typeof maintenanceKinds)[number];
  category: (typeof maintenanceCategories)[number];
  reason: string;
  impact?: string;
  handBackBy: string;
}

export interface ValidationResult {
  test: string;
  passed: boolean;
  message?: string | undefined;
}

/** The site agent's latest validation of a machine (repair/validation.ts). */
export interface MachineValidation {
  id: string;
  state: 'running' | 'passed' | 'failed';
  reason: (typeof validationReasons)[number];
  suite: string;
  requestedAt: string;
  finishedAt?: string;
  results?: ValidationResult[];
  /** When the site agent accepted the request. */
  askedAt?: string;
  /** Its report is awaited until then (`[validation] timeout_minutes` past `askedAt`). */
  reportDueBy?: string;
  /** A call to the agent is in flight (or waits to be tried again) until then: nobody else sends one before. */
  leaseUntil?: string;
  /** Calls sent to the agent for this validation. */
  attempts: number;
  /** Why the last call to the agent failed. */
  error?: string;
  /** When it first overran its timeout: ValidationStuck is raised once per validation. */
  stuckAt?: string;
}

/** A tenant's latest power action on an instance (instances/power.ts). */
export interface InstancePower {
  /** Unique per action: an outcome recorded for an older action never touches a newer one. */
  id: string;
  action: (typeof powerActions)[number];
  /** What the tenant sees: `cycling` while a cycle waits for the agent; after the agent took an action, its end state. */
  state: (typeof powerStates)[number];
  /** The state before the action: what a failed action leaves. */
  previous: Exclude<(typeof powerStates)[number], 'cycling'>;
  /** pending: to be sent (again, once `leaseUntil` passed); in-flight: sent, under the lease; accepted or failed: done. */
  phase: 'pending' | 'in-flight' | 'accepted' | 'failed';
  requestedAt: string;
  requestedBy: string;
  /** While a call is in flight, or until a failed call is tried again: nobody else sends one before. */
  leaseUntil?: string;
  /** Calls sent to the agent for this action. */
  attempts: number;
  finishedAt?: string;
  /** Why the action failed, or why the last call did. */
  error?: string;
}

/** A meta-instance member being replaced (meta-instances/member-replacement.ts). */
export interface MemberReplacement {
  /** The outgoing member. */
  instanceId: string;
  reason: (typeof replacementReasons)[number];
  requestedAt: string;
  requestedBy: string;
  /** What the tenant reported: its machine is quarantined on release, as on any release with an issue. */
  issue?: Issue;
  /** The member placed to take its place; the outgoing one is released once it is Ready. */
  successorId?: string;
}

export interface RepairLogEntry {
  at: string;
  issue?: Issue;
}

/** A machine's recent repair record, for escalation: reports and completed repairs inside the window. */
export interface RepairLog {
  reports: RepairLogEntry[];
  completed: string[];
}

/** A machine taken out for good (machines/retirement.ts). */
export interface Retirement {
  at: string;
  by: string;
  reason: string;
}
