import { mergeChanges, type Change } from '#domain/core/change.ts';
import { allocatability } from '#domain/core/health.ts';
import { assignInstance, releaseInstance } from '#domain/instances/instances.ts';
import { MAINTENANCE_SOURCE } from '#domain/maintenance/maintenance-waves.ts';
import type { Member, MetaDecision, MetaSnapshot } from '#domain/meta-instances/meta-instances.ts';
import { replacementsAfter, withMeta } from '#domain/meta-instances/meta-changes.ts';
import type { HistoryEntry, Issue, Machine, MemberReplacement, MetaInstance } from '#domain/core/model.ts';
import { hasOverride } from '#domain/core/overrides.ts';
import { choosePlacement } from '#domain/meta-instances/placement.ts';
import { chargeQuota } from '#domain/reservations/quota-shards.ts';
import { conflict, notFound } from '#domain/core/rejection.ts';
import { repairPolicy, type SafetyRules, type SafetyState } from '#domain/repair/safety.ts';
import { ageMs, iso } from '#domain/core/time.ts';

// Replacing one member of a meta-instance (docs/api.md "Replacing a member"): on the tenant's request, or because its
// machine is under declared maintenance. Make-before-break when capacity allows: a successor is placed (a replacement,
// under the site's cap) and the outgoing member is released only once the successor is Ready. Else at once: the
// outgoing member is released and placement fills the place as for any failed member. The intent is kept on the
// meta-instance's record, so each step is one commit of that record and a crash resumes where the last one left it.

/** What the site's repair rules need to decide on a reported fault (domain/repair/safety.ts `repairPolicy`). */
export interface FaultRules {
  autoRepair: boolean;
  safety: SafetyState | null;
  fleetSize: number;
  rules: SafetyRules;
}

const ACTOR = 'meta-instance-reconciler';
const running = (member: Member | undefined): boolean => member?.instance.status === 'Ready' || member?.instance.status === 'Repairing';
const live = (member: Member | undefined): boolean => running(member) || member?.instance.status === 'Provisioning';

const entryOf = (meta: MetaInstance, member: Member, at: string, actor: string, message: string): HistoryEntry => ({
  machineId: member.instance.machineId,
  at,
  actor,
  action: 'member-replacement-requested',
  instanceId: member.instance.id,
  message: `meta-instance ${meta.id}: ${message}`,
});

/**
 * The tenant asks for a member to be replaced: recorded on the meta-instance, with an entry in the member's machine's
 * history. Null when it is being replaced already (the same request again). 404 for an instance that is not a
 * member; 409 `invalid-state` for a meta-instance being deleted, a member not Ready, or one on a pinned machine (a
 * pinned machine is the member: it has no substitute).
 */
export function requestMemberReplacement(
  meta: MetaInstance,
  members: Member[],
  request: { instanceId: string; issue?: Issue | undefined; actor: string; now: Date },
): Change | null {
  const member = members.find((m) => m.instance.id === request.instanceId);
  if (!member) throw notFound(`instance ${request.instanceId} of meta-instance ${meta.id}`);
  if (meta.status === 'Deleting' || meta.status === 'Deleted') throw conflict('invalid-state', `meta-instance ${meta.id} is being deleted`);
  if ((meta.memberReplacements ?? []).some((r) => r.instanceId === request.instanceId)) return null;
  if (member.instance.status !== 'Ready') {
    throw conflict('invalid-state', `instance ${request.instanceId} is ${member.instance.status}; only a Ready member is replaced`);
  }
  if (meta.machineIds?.includes(member.instance.machineId)) {
    throw conflict('invalid-state', `instance ${request.instanceId} is on pinned machine ${member.instance.machineId}, which has no substitute`);
  }
  const at = iso(request.now);
  const replacement: MemberReplacement = {
    instanceId: request.instanceId,
    reason: 'tenant',
    requestedAt: at,
    requestedBy: request.actor,
    ...(request.issue ? { issue: request.issue } : {}),
  };
  const change = withMeta(meta, { memberReplacements: [...(meta.memberReplacements ?? []), replacement] }, request.now);
  const issue = request.issue ? `, reporting ${request.issue.category}: ${request.issue.summary}` : '';
  return { ...change, history: [entryOf(meta, member, at, request.actor, `replacement requested${issue}`)] };
}

/** Members on machines under declared maintenance that are not being replaced yet. */
function underMaintenance(s: MetaSnapshot): Member[] {
  const listed = new Set((s.meta.memberReplacements ?? []).map((r) => r.instanceId));
  const pinned = new Set(s.meta.machineIds ?? []);
  return s.members.filter(
    (m) =>
      m.instance.status === 'Ready' &&
      !listed.has(m.instance.id) &&
      !pinned.has(m.instance.machineId) &&
      m.machine !== null &&
      hasOverride(m.machine, MAINTENANCE_SOURCE),
  );
}

/** The replacement whose successor is to be decided now: the first one without one, while no successor provisions. */
function awaitingSuccessor(s: MetaSnapshot): MemberReplacement | undefined {
  const entries = s.meta.memberReplacements ?? [];
  const byId = new Map(s.members.map((m) => [m.instance.id, m]));
  if (entries.some((r) => r.successorId && live(byId.get(r.successorId)))) return undefined;
  return entries.find((r) => !r.successorId && running(byId.get(r.instanceId)));
}

/**
 * The machine a successor would take: the placement of the group without the outgoing member, when that needs exactly
 * one machine (the rest of the group is whole) and one is free where the group must be. Null otherwise.
 */
function successorMachine(s: MetaSnapshot, outgoing: string): Machine | null {
  const rest = s.members.filter((m) => live(m) && m.instance.id !== outgoing);
  if (rest.length !== s.meta.minNodes - 1) return null;
  const isFree = (m: Machine) => allocatability(m, s.heartbeat, s.now).notAllocatableReasons;
  const free = s.candidates.filter((m) => isFree(m).length === 0);
  const plan = choosePlacement(s.meta, rest, free, s.pinned, isFree);
  return plan.kind === 'place' && plan.machines.length === 1 ? plan.machines[0]! : null;
}

/** Whether reading more free machines could let a waiting replacement be made before the outgoing member breaks. */
export function wantsSuccessorCandidates(s: MetaSnapshot): boolean {
  const waiting = awaitingSuccessor(s);
  return waiting !== undefined && successorMachine(s, waiting.instanceId) === null;
}

/** The outgoing member released, with its tenant's issue if there was one, and its replacement entry dropped. */
function releaseOutgoing(s: MetaSnapshot, replacement: MemberReplacement, remaining: MemberReplacement[]): Change {
  const faults = s.faults;
  const member = s.members.find((m) => m.instance.id === replacement.instanceId)!;
  const meta = withMeta(s.meta, { memberReplacements: remaining }, s.now);
  const { issue } = replacement;
  const judged = issue && faults ? repairPolicy(member.machine!, { ...faults, now: s.now }) : { policy: { kind: 'off' as const } };
  const report = { actor: issue ? replacement.requestedBy : ACTOR, issue, isRepairTenant: false, policy: judged.policy };
  const decision = releaseInstance(member.instance, member.machine!, report, s.now);
  const released = decision.kind === 'release' ? decision.change : { history: [] };
  const safety = 'safety' in judged && judged.safety && faults ? { safety: { before: faults.safety, after: judged.safety } } : {};
  return { ...mergeChanges(meta, released), ...safety };
}

/**
 * Whether a replacement still has work: its outgoing member runs on its machine, and, for a maintenance's, the
 * maintenance is still on that machine or a successor was placed already (a cancelled maintenance ends the rest).
 */
function stillWanted(replacement: MemberReplacement, outgoing: Member | undefined): boolean {
  if (!running(outgoing) || !outgoing!.machine) return false;
  return replacement.reason !== 'maintenance' || replacement.successorId !== undefined || hasOverride(outgoing!.machine, MAINTENANCE_SOURCE);
}

/**
 * One step of the meta-instance's replacements, or null when none has anything to do now (placement goes on):
 * members under maintenance join the list; finished entries leave it; a Ready successor releases its outgoing member;
 * a failed one is forgotten (its failure was counted) so the entry is decided again; an entry awaiting a successor
 * gets one when capacity, the replacement cap and the org's quota allow, else its member is released at once.
 */
export function replaceMembers(s: MetaSnapshot): MetaDecision | null {
  const { meta, now } = s;
  const entries = meta.memberReplacements ?? [];
  const maintained = underMaintenance(s);
  if (maintained.length > 0) {
    const at = iso(now);
    const added = maintained.map((m) => ({ instanceId: m.instance.id, reason: 'maintenance' as const, requestedAt: at, requestedBy: ACTOR }));
    const change = withMeta(meta, { memberReplacements: [...entries, ...added] }, now);
    change.history = maintained.map((m) => entryOf(meta, m, at, ACTOR, 'its machine is under declared maintenance: replacement requested'));
    return { kind: 'commit', change, summary: `${added.length} member(s) under maintenance to replace` };
  }
  if (entries.length === 0) return null;
  const byId = new Map(s.members.map((m) => [m.instance.id, m]));
  const current = entries.filter((r) => stillWanted(r, byId.get(r.instanceId)));
  if (current.length < entries.length) {
    return { kind: 'commit', change: withMeta(meta, { memberReplacements: current }, now), summary: 'replacements done' };
  }
  for (const entry of entries) {
    if (!entry.successorId) continue;
    const successor = byId.get(entry.successorId);
    const others = entries.filter((r) => r !== entry);
    // A member under online repair is the tenant's to end first: it is released once back to Ready.
    if (successor?.instance.status === 'Ready' && byId.get(entry.instanceId)?.instance.status === 'Ready') {
      return { kind: 'commit', change: releaseOutgoing(s, entry, others), summary: `successor ${entry.successorId} Ready: member released` };
    }
    if (!live(successor)) {
      const { successorId: _failed, ...again } = entry;
      return { kind: 'commit', change: withMeta(meta, { memberReplacements: [...others, again] }, now), summary: 'successor failed: decided again' };
    }
  }
  const waiting = awaitingSuccessor(s);
  if (!waiting) return null;
  if (meta.nextAttemptAt && ageMs(now, meta.nextAttemptAt) < 0) return null;
  const placed = makeBeforeBreak(s, waiting);
  if (placed || byId.get(waiting.instanceId)?.instance.status !== 'Ready') return placed;
  return {
    kind: 'commit',
    change: releaseOutgoing(
      s,
      waiting,
      entries.filter((r) => r !== waiting),
    ),
    summary: `no room to place first: member ${waiting.instanceId} released at once`,
  };
}

/** The successor placed for `replacement`, counted against the site's replacement cap and the org's quota; null without room. */
function makeBeforeBreak(s: MetaSnapshot, replacement: MemberReplacement): MetaDecision | null {
  const machine = successorMachine(s, replacement.instanceId);
  const cap = s.rules.maxReplacementsInFlight;
  const capRoom = cap === undefined || s.replacements.inFlight.length < cap;
  const quotaRoom = s.usage?.quota === undefined || s.usage.quota - s.usage.used >= 1;
  if (!machine || !capRoom || !quotaRoom) return null;
  const { change: placed, instance } = assignInstance(machine, { ...s.newInstance(machine), metaInstanceId: s.meta.id, replacement: true }, s.now);
  const entries = (s.meta.memberReplacements ?? []).map((r) => (r === replacement ? { ...r, successorId: instance.id } : r));
  const change = mergeChanges(withMeta(s.meta, { memberReplacements: entries }, s.now), placed);
  change.replacements = replacementsAfter(s.replacements, change);
  const charged = chargeQuota(change, s.usage ?? null, s.meta.org, s.meta.machineType);
  if (!charged) return null;
  return { kind: 'commit', change: charged, summary: `successor ${instance.id} placed for member ${replacement.instanceId}` };
}

/** How many more live members than `minNodes` the meta-instance may hold now: one per successor placed and not yet done. */
export const surplusAllowed = (meta: MetaInstance): number => (meta.memberReplacements ?? []).filter((r) => r.successorId).length;
