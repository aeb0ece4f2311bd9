import { createHash } from 'node:crypto';
import type { Change } from './change.ts';
import type { Machine } from './model.ts';
import { ageMs, iso } from './time.ts';

/**
 * Heartbeats without a write per machine per beat, and without work per machine in the beat. The site agent sends
 * its whole roster each beat. The roster is kept in ROSTER_BUCKETS small records (machine ids hashed into buckets),
 * their digests in one small record, and the time the roster was last seen in another (a machine in the roster is
 * live and counts as seen then). A beat writes only the buckets whose ids changed; the roster-bucket reconciler
 * then brings the liveness of that bucket's machines in line, in the background. An idle fleet of any size costs
 * one small write per `timeout / REFRESH_DIVISOR`.
 */
export interface SiteHeartbeat {
  rosterSeenAt: string;
  machineCount: number;
  version: number;
}

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
  appliedDigest?: string;
  version: number;
}

/** Enough for 100,000 machines at ~1,600 ids (≈30 KB) a bucket, few enough for one transaction to hold all. */
export const ROSTER_BUCKETS = 64;

/** Refresh the stored roster time this many times per timeout, so a live machine never looks stale. */
export const REFRESH_DIVISOR = 3;

/** The applied digest a registration leaves: the bucket is walked again, so new machines in the roster go live. */
export const RECHECK = 'recheck';

export function rosterDigest(machineIds: string[]): string {
  const hash = createHash('sha256');
  for (const id of [...new Set(machineIds)].sort()) hash.update(id).update('\n');
  return hash.digest('base64url').slice(0, 16);
}

export const EMPTY_BUCKET_DIGEST = rosterDigest([]);

export function bucketOf(machineId: string): string {
  const bucket = createHash('sha256').update(machineId).digest().readUInt32BE(0) % ROSTER_BUCKETS;
  return String(bucket).padStart(2, '0');
}

/** The roster split into buckets: every bucket, empty ones included, its ids sorted and unique. */
export function bucketsOfRoster(machineIds: string[]): Map<string, string[]> {
  const buckets = new Map<string, string[]>();
  for (let b = 0; b < ROSTER_BUCKETS; b++) buckets.set(String(b).padStart(2, '0'), []);
  for (const id of new Set(machineIds)) buckets.get(bucketOf(id))!.push(id);
  for (const ids of buckets.values()) ids.sort();
  return buckets;
}

export interface HeartbeatPlan {
  /** Store the roster time: it changed, or a third of the timeout passed since it was stored. */
  refresh: boolean;
  /** The buckets whose ids differ from the stored digests, with their new ids. */
  changedBuckets: Map<string, string[]>;
}

export function planHeartbeat(stored: SiteHeartbeat | null, digests: RosterDigests | null, machineIds: string[], now: Date, timeoutMs: number): HeartbeatPlan {
  const changedBuckets = new Map<string, string[]>();
  for (const [bucket, ids] of bucketsOfRoster(machineIds)) {
    if (rosterDigest(ids) !== (digests?.buckets[bucket] ?? EMPTY_BUCKET_DIGEST)) changedBuckets.set(bucket, ids);
  }
  const refresh = !stored || changedBuckets.size > 0 || ageMs(now, stored.rosterSeenAt) >= timeoutMs / REFRESH_DIVISOR;
  return { refresh, changedBuckets };
}

/** A bucket holding the agent's new ids for it; every machine it held before and no longer does has left. */
export function bucketWithRoster(stored: RosterBucket | null, bucket: string, ids: string[], previousRosterSeenAt: string | undefined, now: Date): RosterBucket {
  const listed = new Set(ids);
  const leftIds = [...new Set([...(stored?.ids ?? []), ...(stored?.leftIds ?? [])])].filter((id) => !listed.has(id)).sort();
  return {
    ...stored,
    id: bucket,
    ids,
    leftIds,
    digest: rosterDigest(ids),
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
 * A machine's liveness after a roster change, or null when it is unchanged. A machine leaving the roster keeps as
 * its last heartbeat the time of the previous roster, the last time it was actually seen. No history entry: the
 * liveness of a whole fleet may flip at once (an agent restart), and an entry per machine would double the writes;
 * the machine keeps when it was last seen, and what follows from it (a member replaced) writes its own history.
 */
export function livenessChange(
  machine: Machine,
  inRoster: boolean,
  previousRosterSeenAt: string | undefined,
  now: Date,
  timeoutMs?: number,
): Machine | null {
  if (machine.heartbeatLive === inRoster) return null;
  const lastHeartbeatAt = inRoster ? iso(now) : (previousRosterSeenAt ?? machine.lastHeartbeatAt);
  // When it will count as stale: the sweep looks at it then, so a member on it is replaced without any new write.
  const staleAt = !inRoster && timeoutMs !== undefined ? new Date(Date.parse(lastHeartbeatAt ?? iso(now)) + timeoutMs + 1) : undefined;
  return { ...machine, heartbeatLive: inRoster, lastHeartbeatAt, heartbeatStaleAt: staleAt ? iso(staleAt) : undefined, updatedAt: iso(now) };
}

/** Machines per walk commit: with the bucket itself, within one transaction's 100 items. */
export const WALK_CHUNK = 90;

export interface BucketWalk {
  change: Change;
  /** Every machine is in line: this change also records the bucket as applied. */
  settles: boolean;
}

/**
 * One step of a bucket's walk: up to WALK_CHUNK machines whose liveness differs from the bucket's roster, and once
 * none is left over, the bucket marked as applied. Null when the bucket is settled. A machine not registered (yet)
 * is skipped: its registration asks for the bucket to be walked again.
 */
export function walkBucket(bucket: RosterBucket, machines: Array<Machine | null>, now: Date, timeoutMs: number): BucketWalk | null {
  if (bucketSettled(bucket)) return null;
  const roster = new Set(bucket.ids);
  const changed: Array<{ before: Machine; after: Machine }> = [];
  for (const machine of machines) {
    const next = machine && livenessChange(machine, roster.has(machine.id), bucket.previousRosterSeenAt, now, timeoutMs);
    if (next) changed.push({ before: machine, after: next });
  }
  const settles = changed.length <= WALK_CHUNK;
  const applied: RosterBucket = { ...bucket, leftIds: [], appliedDigest: bucket.digest };
  return {
    change: { machines: changed.slice(0, WALK_CHUNK), ...(settles ? { rosterBuckets: [{ before: bucket, after: applied }] } : {}), history: [] },
    settles,
  };
}
