import { createHash } from 'node:crypto';
import { boundBucketAlerts, type AgentAlert, type BucketAlerts } from '#domain/repair/agent-alerts.ts';
import { MAX_TRANSACTION_ITEMS, type Change, type Versioned } from '#domain/core/change.ts';
import { hardwareHealthStep } from '#domain/repair/hardware-health.ts';
import type { HistoryEntry, Machine } from '#domain/core/model.ts';
import type { RepairPolicyInput, SafetyState } from '#domain/repair/safety.ts';
import { ageMs, iso } from '#domain/core/time.ts';

/**
 * Heartbeats without a write per machine per beat, and without work per machine in the beat. The site agent sends
 * its whole roster each beat. The roster is kept in ROSTER_BUCKETS small records (machine ids hashed into buckets),
 * their digests in one small record, and the time the roster was last seen in another (a machine in the roster is
 * live and counts as seen then). A bucket also keeps the health alerts the agent reports for its machines (only
 * those that prevent allocation, bounded: agent-alerts.ts). A beat writes only the buckets whose ids or alerts
 * changed; the roster-bucket reconciler then brings the liveness and the `hardware-health` override of that
 * bucket's machines in line, in the background. An idle fleet of any size costs one small write per
 * `timeout / REFRESH_DIVISOR`.
 */
export interface SiteHeartbeat {
  /** When the whole roster was last seen: with parts, when the part seen longest ago was. */
  rosterSeenAt: string;
  machineCount: number;
  /** A roster sent in parts: when each part was last seen, and its machines. */
  parts?: RosterParts;
  version: number;
}

/**
 * A roster too large for one beat goes in parts: part `index` of `count` holds the machines of the buckets whose
 * number is `index` modulo `count` (a machine's bucket: bucketOf). Each part refreshes its own time, and the roster
 * counts as seen when its oldest part was, so a part the agent stops sending makes the whole roster stale, never a
 * machine look fresher than it is.
 */
export interface RosterPart {
  index: number;
  count: number;
}
export interface RosterParts {
  count: number;
  /** Per part; '' for one not seen since the roster was split this way. */
  seenAt: string[];
  machineCounts: number[];
}

export const WHOLE_ROSTER: RosterPart = { index: 0, count: 1 };

/** Each bucket's digest, as the last beat that changed the roster stored it. */
export interface RosterDigests {
  buckets: Record<string, string>;
  /** The earliest time a machine that left the roster counts as stale: the first beat after it triggers a stale check. */
  nextStaleAt?: string;
  version: number;
}

/**
 * Written by the first beat after a machine that left the roster went stale; the stream reacts by looking at the
 * machines that are due, so a member on a dead machine is replaced without waiting for the sweep.
 */
export interface StaleCheck {
  id: string;
  requestedAt: string;
  version: number;
}

/** The one stale-check record of the site. */
export const SITE_STALE_CHECK = 'site';

/**
 * The agent's roster for one bucket (`ids`), the machines that left it since its last walk (`leftIds`), and the
 * digest of the roster last applied to the machines. While that differs from `digest` the bucket is walked:
 * level-triggered, so a walk cut short is simply done again.
 */
export interface RosterBucket {
  id: string;
  ids: string[];
  digest: string;
  changedAt: string;
  /** When the roster before this change was seen: the last time a machine that left it was seen. */
  previousRosterSeenAt?: string;
  leftIds: string[];
  /** The alerting machines of `ids` and what the agent reports for them (absent: none alerts). */
  alerts?: BucketAlerts;
  appliedDigest?: string;
  version: number;
}

/** What the agent reports for the machines of its roster that alert: machine id → its alerts, as sent. */
export type RosterAlerts = ReadonlyMap<string, readonly AgentAlert[]>;

/** Enough for 100,000 machines at ~1,600 ids (≈30 KB) a bucket, few enough for one transaction to hold all. */
export const ROSTER_BUCKETS = 64;

/** Refresh the stored roster time this many times per timeout, so a live machine never looks stale. */
export const REFRESH_DIVISOR = 3;

/** The applied digest a registration leaves: the bucket is walked again, so new machines in the roster go live. */
export const RECHECK = 'recheck';

/** The digest of a bucket's ids and alerts; without alerts, that of its ids alone. */
export function rosterDigest(machineIds: string[], alerts: BucketAlerts = {}): string {
  const hash = createHash('sha256');
  for (const id of [...new Set(machineIds)].sort()) hash.update(id).update('\n');
  // Alerts count after a separator no id can hold, so a change of alerts alone changes the digest.
  for (const id of Object.keys(alerts).sort()) hash.update('\0').update(JSON.stringify([id, alerts[id]]));
  return hash.digest('base64url').slice(0, 16);
}

export const EMPTY_BUCKET_DIGEST = rosterDigest([]);

export function bucketOf(machineId: string): string {
  const bucket = createHash('sha256').update(machineId).digest().readUInt32BE(0) % ROSTER_BUCKETS;
  return String(bucket).padStart(2, '0');
}

export const bucketInPart = (bucket: string, part: RosterPart): boolean => Number(bucket) % part.count === part.index;

/** The machines a beat of `part` lists that belong to another part. */
export const machinesOutsidePart = (machineIds: string[], part: RosterPart): string[] =>
  part.count === 1 ? [] : machineIds.filter((id) => !bucketInPart(bucketOf(id), part));

/** When `part` was last seen: its own time once the roster is split that way, else the roster's. */
export function partSeenAt(stored: SiteHeartbeat | null, part: RosterPart): string | undefined {
  if (!stored) return undefined;
  if (part.count === 1 || stored.parts?.count !== part.count) return stored.rosterSeenAt;
  return stored.parts.seenAt[part.index] || undefined;
}

/** The site heartbeat once `part` is seen now with `machineCount` machines. */
export function heartbeatWithPart(stored: SiteHeartbeat | null, part: RosterPart, machineCount: number, now: Date): Omit<SiteHeartbeat, 'version'> {
  if (part.count === 1) return { rosterSeenAt: iso(now), machineCount };
  // Split anew (or differently): every other part counts as seen when the roster last was, no later.
  const kept =
    stored?.parts?.count === part.count
      ? stored.parts
      : { count: part.count, seenAt: Array<string>(part.count).fill(stored?.rosterSeenAt ?? ''), machineCounts: Array<number>(part.count).fill(0) };
  const seenAt = kept.seenAt.map((at, i) => (i === part.index ? iso(now) : at));
  const machineCounts = kept.machineCounts.map((n, i) => (i === part.index ? machineCount : n));
  const seen = seenAt.filter(Boolean).sort();
  return { rosterSeenAt: seen[0]!, machineCount: machineCounts.reduce((a, b) => a + b, 0), parts: { count: part.count, seenAt, machineCounts } };
}

/** The roster split into buckets: every bucket, empty ones included, its ids sorted and unique. */
export function bucketsOfRoster(machineIds: string[]): Map<string, string[]> {
  const buckets = new Map<string, string[]>();
  for (let b = 0; b < ROSTER_BUCKETS; b++) buckets.set(String(b).padStart(2, '0'), []);
  for (const id of new Set(machineIds)) buckets.get(bucketOf(id))!.push(id);
  for (const ids of buckets.values()) ids.sort();
  return buckets;
}

/** The reported alerts of the roster's machines, split by bucket and bounded as the buckets keep them. */
export function alertsByBucket(alerts: RosterAlerts, listed: ReadonlySet<string>): Map<string, BucketAlerts> {
  const reported = new Map<string, Array<[string, readonly AgentAlert[]]>>();
  for (const [id, list] of alerts) {
    if (!listed.has(id) || list.length === 0) continue;
    const bucket = bucketOf(id);
    reported.set(bucket, [...(reported.get(bucket) ?? []), [id, list]]);
  }
  const byBucket = new Map<string, BucketAlerts>();
  for (const [bucket, entries] of reported) {
    const kept = boundBucketAlerts(entries);
    if (Object.keys(kept).length > 0) byBucket.set(bucket, kept);
  }
  return byBucket;
}

export interface HeartbeatPlan {
  /** Store the roster time: it changed, or a third of the timeout passed since it was stored. */
  refresh: boolean;
  /** The buckets whose ids or alerts differ from the stored digests, with their new ids. */
  changedBuckets: Map<string, string[]>;
  /** Every bucket's alerts as it keeps them (buckets without any are left out). */
  alerts: Map<string, BucketAlerts>;
}

export function planHeartbeat(
  stored: SiteHeartbeat | null,
  digests: RosterDigests | null,
  machineIds: string[],
  now: Date,
  timeoutMs: number,
  reported: RosterAlerts = new Map(),
  part: RosterPart = WHOLE_ROSTER,
): HeartbeatPlan {
  const changedBuckets = new Map<string, string[]>();
  const alerts = reported.size === 0 ? new Map<string, BucketAlerts>() : alertsByBucket(reported, new Set(machineIds));
  for (const [bucket, ids] of bucketsOfRoster(machineIds)) {
    if (!bucketInPart(bucket, part)) continue;
    if (rosterDigest(ids, alerts.get(bucket)) !== (digests?.buckets[bucket] ?? EMPTY_BUCKET_DIGEST)) changedBuckets.set(bucket, ids);
  }
  const seenAt = partSeenAt(stored, part);
  const splitChanged = (stored?.parts?.count ?? 1) !== part.count;
  const refresh = !seenAt || splitChanged || changedBuckets.size > 0 || ageMs(now, seenAt) >= timeoutMs / REFRESH_DIVISOR;
  return { refresh, changedBuckets, alerts };
}

/** A bucket holding the agent's new ids (and alerts) for it; every machine it held before and no longer does has left. */
export function bucketWithRoster(
  stored: RosterBucket | null,
  bucket: string,
  ids: string[],
  previousRosterSeenAt: string | undefined,
  now: Date,
  alerts: BucketAlerts = {},
): RosterBucket {
  const listed = new Set(ids);
  const leftIds = [...new Set([...(stored?.ids ?? []), ...(stored?.leftIds ?? [])])].filter((id) => !listed.has(id)).sort();
  const { alerts: _before, ...kept } = stored ?? {};
  return {
    ...kept,
    id: bucket,
    ids,
    leftIds,
    ...(Object.keys(alerts).length > 0 ? { alerts } : {}),
    digest: rosterDigest(ids, alerts),
    changedAt: iso(now),
    ...(previousRosterSeenAt ? { previousRosterSeenAt } : {}),
    version: stored?.version ?? 0,
  };
}

/** A bucket to be walked again although its ids did not change: a registration added machines it may hold. */
export const recheck = (bucket: RosterBucket, now: Date): RosterBucket => ({ ...bucket, appliedDigest: RECHECK, changedAt: iso(now) });

/** Whether a beat that rewrites `stored` with `ids` removes a machine from the roster. */
export const someoneLeft = (stored: RosterBucket | null, ids: string[]): boolean => {
  const listed = new Set(ids);
  return (stored?.ids ?? []).some((id) => !listed.has(id));
};

/**
 * The stale-check bookkeeping of a beat: whether the stored stale time has come (a check is due; the time is cleared),
 * and the next one, earlier when machines leave now: last seen at the roster before this beat, stale after the timeout
 * (as livenessChange records it on the machine).
 */
export function nextStaleCheck(digests: RosterDigests | null, machinesLeft: boolean, previousRosterSeenAt: string | undefined, now: Date, timeoutMs: number) {
  const due = digests?.nextStaleAt !== undefined && ageMs(now, digests.nextStaleAt) >= 0;
  const kept = due ? undefined : digests?.nextStaleAt;
  const leaving = machinesLeft && previousRosterSeenAt ? iso(new Date(Date.parse(previousRosterSeenAt) + timeoutMs + 1)) : undefined;
  const nextStaleAt = [kept, leaving].filter((t): t is string => t !== undefined).sort()[0];
  return { due, nextStaleAt };
}

export const bucketSettled = (bucket: RosterBucket): boolean => bucket.appliedDigest === bucket.digest;

/** Every machine a bucket's walk must look at: those in its roster and those that left it. */
export const machinesOfBucket = (bucket: RosterBucket): string[] => [...bucket.ids, ...bucket.leftIds];

/**
 * A machine's liveness after a roster change, or null when it is unchanged. A machine joining the roster has as its
 * last heartbeat the time that roster came (`seenAt`; default now); one leaving it keeps the time of the previous
 * roster, the last time it was actually seen. So the machines one roster change flips share one time, and the
 * fleet's counters, which count machines per heartbeat time (fleet-summary.ts), keep a few such classes, not one per
 * machine. No history entry: the liveness of a whole fleet may flip at once (an agent restart), and an entry per
 * machine would double the writes; the machine keeps when it was last seen, and what follows from it (a member
 * replaced) writes its own history.
 */
export function livenessChange(
  machine: Machine,
  inRoster: boolean,
  previousRosterSeenAt: string | undefined,
  now: Date,
  timeoutMs?: number,
  seenAt: string = iso(now),
): Machine | null {
  if (machine.heartbeatLive === inRoster) return null;
  const lastHeartbeatAt = inRoster ? seenAt : (previousRosterSeenAt ?? machine.lastHeartbeatAt);
  // When it will count as stale: the sweep looks at it then, so a member on it is replaced without any new write.
  const staleAt = !inRoster && timeoutMs !== undefined ? new Date(Date.parse(lastHeartbeatAt ?? iso(now)) + timeoutMs + 1) : undefined;
  return { ...machine, heartbeatLive: inRoster, lastHeartbeatAt, heartbeatStaleAt: staleAt ? iso(staleAt) : undefined, updatedAt: iso(now) };
}

/** Machines per walk commit: with the bucket itself, within one transaction's 100 items. */
export const WALK_CHUNK = 90;

/**
 * Machines whose liveness alone changes, per walk step: each is a change of its own, so no transaction bounds them;
 * enough that a bucket of 10,000 machines' roster (~160) takes one step, and one of 100,000's a few.
 */
export const WALK_SEPARATE = 500;

/**
 * Items one walk commit may write besides its machines' own: the bucket and the safety record. A machine whose
 * hardware-health override changes brings its history entries (WALK_ITEMS_PER_FAULT at most, for a new fault:
 * machine, two overrides added, two events), so a chunk of such machines is smaller, filled up to
 * MAX_TRANSACTION_ITEMS - WALK_RESERVED_ITEMS.
 */
export const WALK_RESERVED_ITEMS = 2;
export const WALK_ITEMS_PER_FAULT = 5;

export interface BucketWalk {
  /**
   * Machines whose liveness alone changes: a change of one record each, committed on its own before `change` (one
   * conditional write of one item, at half a transaction's price). A flip of the whole fleet at once (an agent's
   * restart, the first roster) costs a write unit per machine, not two.
   */
  separate: Change[];
  /** Machines whose hardware-health override changes, with their history and the safety record; the bucket marked applied once none is left over. */
  change: Change;
  /** Every machine is in line: `change` also records the bucket as applied. */
  settles: boolean;
}

/** What a walk needs to apply the repair policy to the faults it finds (the breaker as read, the site's rules). */
export type WalkPolicy = RepairPolicyInput;

/** One machine's part of a walk: its liveness and its hardware-health override brought in line with the bucket. */
function machineStep(bucket: RosterBucket, roster: ReadonlySet<string>, machine: Machine, now: Date, timeoutMs: number, policy: WalkPolicy) {
  const inRoster = roster.has(machine.id);
  const live = livenessChange(machine, inRoster, bucket.previousRosterSeenAt, now, timeoutMs, bucket.changedAt);
  const reported = inRoster ? (bucket.alerts?.[machine.id] ?? []) : undefined;
  const health = hardwareHealthStep(live ?? machine, reported, policy, iso(now));
  if (!live && !health) return null;
  return { after: health?.after ?? live!, history: health?.history ?? [], safety: health?.safety };
}

/**
 * One step of a bucket's walk: the machines whose liveness or hardware-health differs from the bucket (those whose
 * liveness alone changes separately, up to WALK_SEPARATE; the others as many as fit one transaction, at most
 * WALK_CHUNK), and once none is left over, the bucket marked as applied. Null when the bucket is settled. A machine
 * not registered (yet) is skipped: its registration asks for the bucket to be walked again. The faults found are
 * counted on the safety record in order, and the record is written once per chunk.
 */
export function walkBucket(bucket: RosterBucket, machines: Array<Machine | null>, now: Date, timeoutMs: number, policy: WalkPolicy): BucketWalk | null {
  if (bucketSettled(bucket)) return null;
  const roster = new Set(bucket.ids);
  const separate: Change[] = [];
  const changed: Array<{ before: Machine; after: Machine }> = [];
  const history: HistoryEntry[] = [];
  let safety: SafetyState | undefined;
  let items = WALK_RESERVED_ITEMS;
  let settles = true;
  for (const machine of machines) {
    if (!machine) continue;
    const step = machineStep(bucket, roster, machine, now, timeoutMs, { ...policy, safety: safety ?? policy.safety });
    if (!step) continue;
    if (step.history.length === 0 && !step.safety) {
      if (separate.length === WALK_SEPARATE) {
        settles = false;
        break;
      }
      separate.push({ machines: [{ before: machine, after: step.after }], history: [] });
      continue;
    }
    const cost = 1 + step.history.length;
    if (changed.length === WALK_CHUNK || items + cost > MAX_TRANSACTION_ITEMS) {
      settles = false;
      break;
    }
    items += cost;
    changed.push({ before: machine, after: step.after });
    history.push(...step.history);
    if (step.safety) safety = step.safety;
  }
  const applied: RosterBucket = { ...bucket, leftIds: [], appliedDigest: bucket.digest };
  return {
    separate,
    change: {
      machines: changed,
      ...(settles ? { rosterBuckets: [{ before: bucket, after: applied }] } : {}),
      ...(safety ? { safety: { before: policy.safety, after: safety } } : {}),
      history,
    },
    settles,
  };
}

// What a Change carries of this file's records (core/change.ts).
declare module '#domain/core/change.ts' {
  interface Change {
    /** The agent's roster, by bucket. */
    rosterBuckets?: Versioned<RosterBucket>[];
    rosterDigests?: Versioned<RosterDigests>;
    staleChecks?: Versioned<StaleCheck>[];
  }
}
