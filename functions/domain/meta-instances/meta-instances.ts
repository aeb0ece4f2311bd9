import type { Catalog } from '#domain/machines/catalog.ts';
import { mergeChanges, type Change } from '#domain/core/change.ts';
import { allocatability, heartbeatStale, preventingSources, type HeartbeatView } from '#domain/core/health.ts';
import { assignInstance, releaseInstance, type NewInstanceSpec } from '#domain/instances/instances.ts';
import type { Instance, Machine, MetaInstance, Placement } from '#domain/core/model.ts';
import { reservedForAnother } from '#domain/reservations/reservations.ts';
import { choosePlacement, groupOf, isSatisfied, placeName, type Plan } from '#domain/meta-instances/placement.ts';
import { Rejection } from '#domain/core/rejection.ts';
import type { QuotaUsage } from '#domain/reservations/quotas.ts';
import { chargeQuota } from '#domain/reservations/quota-shards.ts';
import { addMs, ageMs, iso } from '#domain/core/time.ts';
import { replacementsAfter, withMeta, type ReplacementsView } from '#domain/meta-instances/meta-changes.ts';
import { replaceMembers, wantsSuccessorCandidates, type FaultRules } from '#domain/meta-instances/member-replacement.ts';
import { MAINTENANCE_SOURCE } from '#domain/maintenance/maintenance-waves.ts';

// Meta-instances: "keep N machines of this type for me". A pure reconciler looks at a snapshot (the meta-instance,
// its members — the instances its record lists, with their machines — and the free machines of its type) and returns
// at most one change. Run it again on the new state until it returns nothing: that is the level-triggered loop.
// Membership and the replacement cap are kept on records, never read from an index, so both are exact: an index lags.

/** Most members one pass touches, so that a change always fits one transaction (100 writes). */
export const MAX_GROUP = 24;

const LIVE: ReadonlySet<Instance['status']> = new Set(['Provisioning', 'Ready', 'Repairing']);

export interface Member {
  instance: Instance;
  machine: Machine | null;
}

export interface MetaRules {
  maxConsecutiveFailures: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** The cap on meta-instance replacements being provisioned site-wide ([meta_instance]). */
  maxReplacementsInFlight?: number;
}

export type { ReplacementsView };

export const noReplacements: ReplacementsView = { record: null, inFlight: [] };

export interface MetaSnapshot {
  meta: MetaInstance;
  /** Every instance its record lists (Terminated ones too, until a commit drops them), with their machines. */
  members: Member[];
  replacements: ReplacementsView;
  /** Free machines of the type read from the allocatable index, as many as the decision needs (heartbeat freshness is checked here). */
  candidates: Machine[];
  /** The pinned machines' records, null for unknown ids. */
  pinned: Map<string, Machine | null>;
  heartbeat: HeartbeatView;
  now: Date;
  rules: MetaRules;
  /** The org's usage of the type and its quota (domain/reservations/quotas.ts); null when it has none; absent when not read. */
  usage?: QuotaUsage | null;
  /** The site's repair rules, read when a member replacement carries the tenant's issue (domain/meta-instances/member-replacement.ts). */
  faults?: FaultRules;
  /** Ids for the instances a placement creates. */
  newInstance(machine: Machine): NewInstanceSpec;
}

export type MetaDecision = { kind: 'none' } | { kind: 'commit'; change: Change; summary: string };

const none: MetaDecision = { kind: 'none' };
const ACTOR = 'meta-instance-reconciler';

/** Why a live member no longer counts, or null while it is healthy. */
export function memberFailure(member: Member, heartbeat: HeartbeatView, now: Date): string | null {
  const { instance, machine } = member;
  if (instance.status === 'Failed') return instance.metaFailureCounted ? null : `create failed: ${instance.failureReason ?? 'unknown reason'}`;
  if (!LIVE.has(instance.status)) return null;
  if (!machine) return 'machine is gone';
  // Online repair is the tenant's own, sanctioned repair: it never counts as a failure.
  if (instance.status === 'Repairing') return null;
  // Declared maintenance is no fault: the member is replaced before its machine is handed back (member-replacement.ts).
  const preventing = preventingSources(machine.healthOverrides).filter((source) => source !== MAINTENANCE_SOURCE);
  if (preventing.length > 0) return `health-override:${preventing[0]}`;
  if (heartbeatStale(machine, heartbeat, now)) return 'heartbeat-stale';
  return null;
}

/** A member still holding (or getting) its machine: what the meta-instance counts as its instances. */
export const isLive = (member: Member) => LIVE.has(member.instance.status);

function releaseMember(member: Member, now: Date, why?: string): Change {
  const decision = releaseInstance(member.instance, member.machine!, { actor: ACTOR, isRepairTenant: false, policy: { kind: 'off' } }, now);
  if (decision.kind === 'unchanged') return { history: [] };
  const change = decision.change;
  if (why && change.instances?.[0]) {
    change.instances[0] = { ...change.instances[0], after: { ...change.instances[0].after, failureReason: why, metaFailureCounted: true } };
  }
  return change;
}

export function backoffMs(failures: number, rules: MetaRules): number {
  const beyond = failures - rules.maxConsecutiveFailures;
  if (beyond <= 0) return 0;
  return Math.min(rules.backoffBaseMs * 2 ** (beyond - 1), rules.backoffMaxMs);
}

function statusFor(failures: number, rules: MetaRules): MetaInstance['status'] {
  return failures > rules.maxConsecutiveFailures ? 'Retrying' : 'Placing';
}

export function reconcileMetaInstance(s: MetaSnapshot): MetaDecision {
  const { meta, now } = s;
  if (meta.status === 'Deleted') return withMembership(releaseStragglers(s), meta, s.members);
  if (meta.status === 'Deleting') return withMembership(finishDeleting(meta, s.members, now), meta, s.members);
  return withMembership(recordFailures(s) ?? replaceMembers(s) ?? place(s), meta, s.members);
}

/**
 * The membership a commit leaves on the meta-instance's record: its members, less those Terminated (as read, or by
 * this change), plus the instances this change creates for it. Every change of a meta-instance decision writes its
 * record, so an instance joins in the transaction that creates it, guarded by the record's version.
 */
function withMembership(decision: MetaDecision, meta: MetaInstance, members: Member[]): MetaDecision {
  if (decision.kind === 'none') return decision;
  const instances = decision.change.instances ?? [];
  const statusOf = new Map(members.map((m) => [m.instance.id, m.instance.status]));
  for (const { after } of instances) statusOf.set(after.id, after.status);
  const joined = instances.filter((v) => v.before === null && v.after.metaInstanceId === meta.id).map((v) => v.after.id);
  const memberIds = [...new Set([...members.map((m) => m.instance.id), ...joined])].filter((id) => statusOf.get(id) !== 'Terminated');
  const metaInstances = (decision.change.metaInstances ?? []).map((v) => (v.after.id === meta.id ? { ...v, after: { ...v.after, memberIds } } : v));
  return { ...decision, change: { ...decision.change, metaInstances } };
}

/** Cascade: everything still bound goes; when nothing is, the meta-instance is gone. */
function finishDeleting(meta: MetaInstance, members: Member[], now: Date): MetaDecision {
  const live = members.filter((m) => isLive(m) && m.machine).slice(0, MAX_GROUP);
  if (live.length === 0) return { kind: 'commit', change: withMeta(meta, { status: 'Deleted' }, now), summary: 'deleted' };
  return { kind: 'commit', change: mergeChanges(withMeta(meta, {}, now), ...live.map((m) => releaseMember(m, now))), summary: `released ${live.length}` };
}

/** An instance placed for a meta-instance that was deleted meanwhile is released: nothing is ever orphaned. */
function releaseStragglers(s: MetaSnapshot): MetaDecision {
  const live = s.members.filter((m) => isLive(m) && m.machine).slice(0, MAX_GROUP);
  if (live.length === 0) return none;
  return {
    kind: 'commit',
    change: mergeChanges(withMeta(s.meta, {}, s.now), ...live.map((m) => releaseMember(m, s.now))),
    summary: `released ${live.length} stragglers`,
  };
}

/** Failed members are released (their machines keep their overrides) and counted, once each. */
function recordFailures(s: MetaSnapshot): MetaDecision | null {
  const failing = s.members
    .map((member) => ({ member, reason: memberFailure(member, s.heartbeat, s.now) }))
    .filter((f): f is { member: Member; reason: string } => f.reason !== null)
    .slice(0, MAX_GROUP);
  if (failing.length === 0) return null;
  const changes = failing.map(({ member, reason }) => {
    const why = `machine ${member.instance.machineId}: ${reason}`;
    if (member.instance.status === 'Failed' || !member.machine) {
      const after: Instance = {
        ...member.instance,
        metaFailureCounted: true,
        updatedAt: iso(s.now),
        ...(member.machine ? {} : { status: 'Terminated', failureReason: why }),
      };
      return { instances: [{ before: member.instance, after }], history: [] } as Change;
    }
    return releaseMember(member, s.now, why);
  });
  const failures = s.meta.consecutiveFailures + failing.length;
  const wait = backoffMs(failures, s.rules);
  const last = failing.at(-1)!;
  const meta = withMeta(
    s.meta,
    {
      consecutiveFailures: failures,
      lastFailureError: `machine ${last.member.instance.machineId}: ${last.reason}`,
      status: statusFor(failures, s.rules),
      ...(wait > 0 ? { nextAttemptAt: iso(addMs(s.now, wait)) } : { nextAttemptAt: undefined }),
    },
    s.now,
  );
  return { kind: 'commit', change: mergeChanges(meta, ...changes), summary: `${failing.length} member(s) failed` };
}

/** What placement would do with the snapshot's candidates; null when it has nothing to place now. */
function planOf(s: MetaSnapshot, healthy: Member[]): Plan | null {
  if (isSatisfied(s.meta, healthy)) return null;
  if (s.meta.nextAttemptAt && ageMs(s.now, s.meta.nextAttemptAt) < 0) return null;
  const isFree = (m: Machine) => [...allocatability(m, s.heartbeat, s.now).notAllocatableReasons, ...(reservedForAnother(m, s.meta.org) ? ['reserved'] : [])];
  const free = s.candidates.filter((m) => isFree(m).length === 0);
  return choosePlacement(s.meta, healthy, free, s.pinned, isFree);
}

/**
 * Whether the decision on this snapshot would fail for want of free machines, so reading more candidates could
 * change it. The loader reads the allocatable index until this is false (or its read budget is spent), so a
 * decision costs what it needs: nothing for a satisfied or pinned-only group, one rack for a group's replacement.
 */
export function wantsMoreCandidates(s: MetaSnapshot): boolean {
  if (s.meta.status === 'Deleting' || s.meta.status === 'Deleted') return false;
  // Failed members are released first; the next pass, on fresh state, places their replacements.
  if (recordFailures(s)) return false;
  if (wantsSuccessorCandidates(s)) return true;
  const plan = planOf(s, s.members.filter(isLive));
  return plan?.kind === 'error' && plan.shortOfCapacity;
}

/**
 * Where a together-group is bound (by its healthy members or its pinned machines), if it is bound to one place: the
 * rack and NVLink domain to read free machines in first. A group in one NVLink domain reads its domain.
 */
export function homePlace(s: Pick<MetaSnapshot, 'meta' | 'members' | 'pinned'>): { rack?: string; nvlinkDomain?: string } | undefined {
  const group = groupOf(s.meta.placement);
  if (!group) return undefined;
  const bound = new Map<string | undefined, Machine>();
  for (const member of s.members) if (isLive(member) && member.machine) bound.set(group(member.machine), member.machine);
  for (const machine of s.pinned.values()) if (machine) bound.set(group(machine), machine);
  const [only, ...others] = [...bound];
  if (!only || others.length > 0 || only[0] === undefined) return undefined;
  const machine = only[1];
  return s.meta.placement.sameNvlinkDomain ? { nvlinkDomain: machine.nvlinkDomain! } : { rack: machine.rack };
}

function place(s: MetaSnapshot): MetaDecision {
  const { meta, now, rules } = s;
  const healthy = s.members.filter(isLive);
  const plan = planOf(s, healthy);
  if (plan === null) {
    if (!isSatisfied(meta, healthy)) return none;
    if (meta.status === 'Ready' && meta.placementError === undefined && meta.consecutiveFailures === 0) return none;
    const change = withMeta(meta, { status: 'Ready', placementError: undefined, nextAttemptAt: undefined, consecutiveFailures: 0 }, now);
    return { kind: 'commit', change, summary: 'satisfied' };
  }
  if (plan.kind === 'regroup') {
    const group = groupOf(meta.placement)!;
    const moving = healthy.filter((m) => !m.machine || group(m.machine) !== plan.place).slice(0, MAX_GROUP);
    const change = mergeChanges(withMeta(meta, {}, now), ...moving.map((m) => releaseMember(m, now)));
    return { kind: 'commit', change, summary: `moving the group to ${plan.place}` };
  }
  if (plan.kind === 'error') return placementFailed(s, plan.message);
  // Replacing failed members is capped site-wide, so a fleet-wide event does not turn into a replacement storm.
  const replacing = healthy.length > 0 || meta.consecutiveFailures > 0;
  const cap = rules.maxReplacementsInFlight;
  const inFlight = s.replacements.inFlight.length;
  const slots = cap === undefined || !replacing ? MAX_GROUP : cap - inFlight;
  if (slots <= 0) return placementFailed(s, `waiting for a replacement slot: ${inFlight} of ${cap} replacements in flight site-wide`);
  const quotaRoom = s.usage?.quota === undefined ? Number.POSITIVE_INFINITY : s.usage.quota - s.usage.used;
  if (plan.machines.length > quotaRoom) {
    const { org, machineType, used, quota } = s.usage!;
    return placementFailed(
      s,
      `quota-exceeded: org ${org} holds ${used} of its quota of ${quota} ${machineType} machine(s); ${plan.machines.length} more needed`,
    );
  }
  // Under the cap a large group is replaced a few at a time; the rest follow as slots free up.
  const assignments = plan.machines
    .slice(0, Math.min(MAX_GROUP, slots))
    .map((machine) => assignInstance(machine, { ...s.newInstance(machine), metaInstanceId: meta.id, replacement: replacing }, now));
  const complete = assignments.length === plan.machines.length;
  const status = complete
    ? { status: 'Ready' as const, placementError: undefined, nextAttemptAt: undefined, consecutiveFailures: 0 }
    : { placementError: `waiting for a replacement slot: placed ${assignments.length} of ${plan.machines.length}, cap ${cap} in flight site-wide` };
  const change = mergeChanges(withMeta(meta, status, now), ...assignments.map((a) => a.change));
  if (replacing) change.replacements = replacementsAfter(s.replacements, change);
  const charged = chargeQuota(change, s.usage ?? null, meta.org, meta.machineType);
  if (!charged) return placementFailed(s, `waiting for room in org ${meta.org}'s ${meta.machineType} usage shards, dealt again on the next attempt`);
  return { kind: 'commit', change: charged, summary: `placed ${assignments.length}` };
}

/** A placement error is written once per distinct message, so a meta-instance waiting for capacity costs nothing. */
function placementFailed(s: MetaSnapshot, message: string): MetaDecision {
  const status = statusFor(s.meta.consecutiveFailures, s.rules);
  if (s.meta.placementError === message && s.meta.status === status) return none;
  return { kind: 'commit', change: withMeta(s.meta, { placementError: message, status }, s.now), summary: message };
}

export interface MetaInstanceRequest {
  machineType: string;
  minNodes: number;
  machineIds?: string[] | undefined;
  placement: Placement;
  labels: Record<string, string>;
}

/** 422 `unsatisfiable` when this site can never satisfy the request, whatever frees up. */
export function assertSatisfiable(request: MetaInstanceRequest, catalog: Catalog, pinned: Map<string, Machine | null>): void {
  const fail = (detail: string) => {
    throw new Rejection(422, 'unsatisfiable', detail);
  };
  const type = catalog.types[request.machineType];
  if (!type) fail(`this site has no machines of type ${request.machineType}`);
  if (request.minNodes > type!.count) fail(`this site has only ${type!.count} ${request.machineType} machine(s); ${request.minNodes} requested`);
  const largestRack = Math.max(0, ...Object.values(type!.racks));
  if (request.placement.sameRack && request.minNodes > largestRack) {
    fail(`no rack has ${request.minNodes} ${request.machineType} machines (largest: ${largestRack})`);
  }
  const largestDomain = Math.max(0, ...Object.values(type!.nvlinkDomains ?? {}));
  if (request.placement.sameNvlinkDomain && request.minNodes > largestDomain) {
    fail(`no NVLink domain has ${request.minNodes} ${request.machineType} machines (largest: ${largestDomain})`);
  }
  const ids = request.machineIds ?? [];
  if (ids.length > request.minNodes) fail(`${ids.length} pinned machines but minNodes is ${request.minNodes}`);
  const group = groupOf(request.placement);
  const places = new Set<string | undefined>();
  for (const id of ids) {
    const machine = pinned.get(id);
    if (!machine) fail(`pinned machine ${id} is unknown`);
    else if (machine.machineType !== request.machineType) fail(`pinned machine ${id} is a ${machine.machineType}, not a ${request.machineType}`);
    else if (group) places.add(group(machine));
  }
  if (places.has(undefined)) fail('a pinned machine has no NVLink domain but sameNvlinkDomain was asked for');
  if (places.size > 1) fail(`pinned machines are not in one ${placeName(request.placement)}, which was asked for`);
}

export function newMetaInstance(id: string, org: string, request: MetaInstanceRequest, createdBy: string, now: Date): MetaInstance {
  const at = iso(now);
  return {
    id,
    org,
    machineType: request.machineType,
    minNodes: request.minNodes,
    ...(request.machineIds?.length ? { machineIds: request.machineIds } : {}),
    placement: request.placement,
    labels: request.labels,
    status: 'Placing',
    consecutiveFailures: 0,
    waitingSince: at,
    createdBy,
    createdAt: at,
    updatedAt: at,
    memberIds: [],
    version: 0,
  };
}

/** Deleting starts the cascade in the same decision: its live instances are released together with it. */
export function deleteMetaInstance(meta: MetaInstance, members: Member[], now: Date): MetaDecision {
  if (meta.status === 'Deleting' || meta.status === 'Deleted') return none;
  const live = members.filter((m) => isLive(m) && m.machine).slice(0, MAX_GROUP);
  const change = mergeChanges(withMeta(meta, { status: 'Deleting', memberReplacements: undefined }, now), ...live.map((m) => releaseMember(m, now)));
  return withMembership({ kind: 'commit', change, summary: `delete requested; released ${live.length}` }, meta, members);
}
