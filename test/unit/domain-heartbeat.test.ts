import { describe, expect, it } from 'vitest';
import {
  bucketOf,
  bucketsOfRoster,
  bucketWithRoster,
  livenessChange,
  nextStaleCheck,
  planHeartbeat,
  recheck,
  RECHECK,
  REFRESH_DIVISOR,
  ROSTER_BUCKETS,
  rosterDigest,
  someoneLeft,
  walkBucket,
  WALK_SEPARATE,
  type RosterBucket,
  type RosterDigests,
  type SiteHeartbeat,
  type WalkPolicy,
} from '#domain/machines/heartbeat.ts';
import { heartbeatStale } from '#domain/core/health.ts';
import type { Machine } from '#domain/core/model.ts';
import { addMs, iso } from '#domain/core/time.ts';
import { aMachine, SAFETY_RULES, T0 } from '#test/support/fixtures.ts';

const TIMEOUT_MS = 30_000;

const machine = (over: Partial<Machine> = {}): Machine => aMachine({ version: 2, ...over });
/** Auto-repair off: these walks are about liveness only. */
const walkPolicy = (now: Date): WalkPolicy => ({ autoRepair: false, safety: null, fleetSize: 10, now, rules: SAFETY_RULES });

describe('rosterDigest', () => {
  it('ignores order and duplicates', () => {
    const digest = rosterDigest(['a', 'b', 'c']);
    expect(rosterDigest(['c', 'a', 'b'])).toBe(digest);
    expect(rosterDigest(['b', 'b', 'a', 'c', 'a'])).toBe(digest);
  });

  it.each([
    { name: 'a machine more', other: ['a', 'b', 'c', 'd'] },
    { name: 'a machine less', other: ['a', 'b'] },
    { name: 'a machine replaced', other: ['a', 'b', 'x'] },
    { name: 'ids joined differently', other: ['ab', 'c'] },
    { name: 'empty roster', other: [] },
  ])('changes with the set of ids: $name', ({ other }) => {
    expect(rosterDigest(other)).not.toBe(rosterDigest(['a', 'b', 'c']));
  });

  it('is deterministic, also for the empty roster', () => {
    expect(rosterDigest([])).toBe(rosterDigest([]));
    expect(rosterDigest(['x'])).toBe(rosterDigest(['x']));
  });
});

describe('roster buckets', () => {
  const ids = Array.from({ length: 2_000 }, (_, i) => `m-${i}`);

  it('every id falls in exactly one of ROSTER_BUCKETS buckets, the same one every time, spread across all', () => {
    const buckets = bucketsOfRoster([...ids, ...ids.slice(0, 10)]);
    expect(buckets.size).toBe(ROSTER_BUCKETS);
    expect([...buckets.values()].flat().sort()).toEqual([...ids].sort());
    for (const [bucket, members] of buckets) for (const id of members) expect(bucketOf(id)).toBe(bucket);
    const sizes = [...buckets.values()].map((members) => members.length);
    expect(Math.min(...sizes)).toBeGreaterThan(0);
    expect(Math.max(...sizes)).toBeLessThan((3 * ids.length) / ROSTER_BUCKETS);
  });
});

describe('planHeartbeat', () => {
  const roster = ['a', 'b', 'c'];
  const stored: SiteHeartbeat = { rosterSeenAt: iso(T0), machineCount: 3, version: 7 };
  const digestsOf = (machineIds: string[]): RosterDigests => ({
    buckets: Object.fromEntries([...bucketsOfRoster(machineIds)].map(([bucket, members]) => [bucket, rosterDigest(members)])),
    version: 1,
  });
  const third = TIMEOUT_MS / REFRESH_DIVISOR;

  it('refreshes three times per timeout', () => {
    expect(REFRESH_DIVISOR).toBe(3);
  });

  it.each([
    { name: 'same roster, just stored', age: 0, refresh: false },
    { name: 'same roster, just under timeout/3', age: third - 1, refresh: false },
    { name: 'same roster, exactly timeout/3', age: third, refresh: true },
    { name: 'same roster, long past the timeout', age: 10 * TIMEOUT_MS, refresh: true },
  ])('$name → refresh $refresh, no bucket changed', ({ age, refresh }) => {
    expect(planHeartbeat(stored, digestsOf(roster), roster, addMs(T0, age), TIMEOUT_MS)).toEqual({ refresh, changedBuckets: new Map(), alerts: new Map() });
  });

  it('a machine leaving changes its bucket only, and the roster time is stored at once', () => {
    const plan = planHeartbeat(stored, digestsOf(roster), ['a', 'c'], T0, TIMEOUT_MS);
    expect(plan.refresh).toBe(true);
    expect([...plan.changedBuckets.keys()]).toEqual([bucketOf('b')]);
    expect(plan.changedBuckets.get(bucketOf('b'))).toEqual(bucketsOfRoster(['a', 'c']).get(bucketOf('b')));
  });

  it('nothing stored yet: every bucket that holds a machine changed; empty buckets match the empty digest', () => {
    const plan = planHeartbeat(null, null, roster, T0, TIMEOUT_MS);
    expect(plan.refresh).toBe(true);
    expect([...plan.changedBuckets.keys()].sort()).toEqual([...new Set(roster.map(bucketOf))].sort());
    expect(planHeartbeat(null, null, [], T0, TIMEOUT_MS)).toEqual({ refresh: true, changedBuckets: new Map(), alerts: new Map() });
  });
});

describe('bucketWithRoster', () => {
  it('the machines it held and no longer lists have left, also those of an earlier change not walked yet', () => {
    const first = bucketWithRoster(null, '03', ['a', 'b', 'c'], undefined, T0);
    expect(first).toMatchObject({ id: '03', ids: ['a', 'b', 'c'], leftIds: [], digest: rosterDigest(['a', 'b', 'c']), changedAt: iso(T0), version: 0 });
    const second = bucketWithRoster(first, '03', ['a', 'c'], iso(T0), addMs(T0, 5_000));
    expect(second).toMatchObject({ ids: ['a', 'c'], leftIds: ['b'], previousRosterSeenAt: iso(T0) });
    expect(bucketWithRoster(second, '03', ['b', 'd'], iso(T0), addMs(T0, 10_000))).toMatchObject({ ids: ['b', 'd'], leftIds: ['a', 'c'] });
  });
});

describe('stale checks', () => {
  const seen = iso(T0);
  const staleAt = iso(addMs(T0, TIMEOUT_MS + 1));
  const digests = (nextStaleAt?: string): RosterDigests => ({ buckets: {}, ...(nextStaleAt ? { nextStaleAt } : {}), version: 1 });

  it('someoneLeft: only a machine the stored bucket listed and the new ids do not', () => {
    const stored = bucketWithRoster(null, '00', ['a', 'b'], undefined, T0);
    expect(someoneLeft(stored, ['a', 'b', 'c'])).toBe(false);
    expect(someoneLeft(stored, ['a'])).toBe(true);
    expect(someoneLeft(null, ['a'])).toBe(false);
  });

  it.each([
    { name: 'nothing stored, nobody leaves', stored: undefined, left: false, age: 0, due: false, next: undefined },
    { name: 'a machine leaves: stale a timeout after the previous roster', stored: undefined, left: true, age: 5_000, due: false, next: staleAt },
    { name: 'an earlier stale time is kept', stored: iso(addMs(T0, 10_000)), left: true, age: 5_000, due: false, next: iso(addMs(T0, 10_000)) },
    { name: 'just before the stale time: not due', stored: staleAt, left: false, age: TIMEOUT_MS, due: false, next: staleAt },
    { name: 'at the stale time: due, and cleared', stored: staleAt, left: false, age: TIMEOUT_MS + 1, due: true, next: undefined },
    { name: 'due while another machine leaves: the new time replaces it', stored: staleAt, left: true, age: TIMEOUT_MS + 1, due: true, next: staleAt },
  ])('$name', ({ stored, left, age, due, next }) => {
    expect(nextStaleCheck(digests(stored), left, seen, addMs(T0, age), TIMEOUT_MS)).toEqual({ due, nextStaleAt: next });
  });
});

describe('walkBucket', () => {
  const now = addMs(T0, 90_000);
  const policy = walkPolicy(now);
  const bucketOfIds = (ids: string[], leftIds: string[]): RosterBucket => ({ ...bucketWithRoster(null, '00', ids, iso(addMs(T0, 80_000)), now), leftIds });

  it('makes listed machines live and the ones that left not live, each a change of its own, and records the bucket as applied after them', () => {
    const bucket = bucketOfIds(['m-1', 'm-2'], ['m-3']);
    const machines = [machine({ id: 'm-1', heartbeatLive: false }), machine({ id: 'm-2' }), machine({ id: 'm-3' })];
    const walk = walkBucket(bucket, machines, now, TIMEOUT_MS, policy)!;
    expect(walk.settles).toBe(true);
    expect(walk.separate.map((c) => c.machines!.map((m) => [m.after.id, m.after.heartbeatLive]))).toEqual([[['m-1', true]], [['m-3', false]]]);
    expect(walk.separate.map((c) => c.machines![0]!.before)).toEqual([machines[0], machines[2]]);
    expect(walk.separate.every((c) => c.history.length === 0 && Object.keys(c).length === 2)).toBe(true);
    expect(walk.change).toEqual({
      machines: [],
      rosterBuckets: [{ before: bucket, after: { ...bucket, leftIds: [], appliedDigest: bucket.digest } }],
      history: [],
    });
  });

  it('stamps the machines it makes live with the time their roster came, not the time of the walk, whenever it runs', () => {
    const bucket = { ...bucketOfIds(['m-1', 'm-2'], []), changedAt: iso(addMs(T0, 85_000)) };
    const machines = [machine({ id: 'm-1', heartbeatLive: false }), machine({ id: 'm-2', heartbeatLive: false })];
    for (const at of [now, addMs(now, 60_000)]) {
      const walk = walkBucket(bucket, machines, at, TIMEOUT_MS, walkPolicy(at))!;
      expect(walk.separate.map((c) => c.machines![0]!.after.lastHeartbeatAt)).toEqual([bucket.changedAt, bucket.changedAt]);
    }
  });

  it('a settled bucket needs no walk; a machine not registered is skipped', () => {
    const settled = { ...bucketOfIds(['m-1'], []), appliedDigest: rosterDigest(['m-1']) };
    expect(walkBucket(settled, [machine({ id: 'm-1', heartbeatLive: false })], now, TIMEOUT_MS, policy)).toBeNull();
    const walk = walkBucket(bucketOfIds(['m-1'], []), [null], now, TIMEOUT_MS, policy)!;
    expect(walk).toEqual({ separate: [], settles: true, change: { machines: [], rosterBuckets: [expect.anything()], history: [] } });
  });

  it('more liveness changes than one step takes: WALK_SEPARATE at a time, the bucket applied only with the last', () => {
    const ids = Array.from({ length: WALK_SEPARATE + 5 }, (_, i) => `m-${String(i).padStart(4, '0')}`);
    const bucket = bucketOfIds(ids, []);
    const first = walkBucket(
      bucket,
      ids.map((id) => machine({ id, heartbeatLive: false })),
      now,
      TIMEOUT_MS,
      policy,
    )!;
    expect(first.settles).toBe(false);
    expect(first.separate).toHaveLength(WALK_SEPARATE);
    expect(first.change.rosterBuckets).toBeUndefined();
    const applied = new Set(first.separate.map((c) => c.machines![0]!.after.id));
    const second = walkBucket(
      bucket,
      ids.map((id) => machine({ id, heartbeatLive: applied.has(id) })),
      now,
      TIMEOUT_MS,
      policy,
    )!;
    expect(second.settles).toBe(true);
    expect(second.separate).toHaveLength(5);
    expect(second.change.rosterBuckets).toHaveLength(1);
  });

  it("a registration's recheck makes a settled bucket walk again, due at once", () => {
    const settled = { ...bucketOfIds(['m-1'], []), appliedDigest: rosterDigest(['m-1']) };
    const later = addMs(now, 1_000);
    const rechecked = recheck(settled, later);
    expect(rechecked).toMatchObject({ appliedDigest: RECHECK, changedAt: iso(later), ids: ['m-1'] });
    expect(walkBucket(rechecked, [machine({ id: 'm-1', heartbeatLive: false })], later, TIMEOUT_MS, policy)!.separate).toHaveLength(1);
  });
});

describe('livenessChange', () => {
  const now = addMs(T0, 90_000);
  const previousRoster = iso(addMs(T0, 80_000));

  it.each([
    { name: 'live and still in the roster', live: true, inRoster: true },
    { name: 'not live and still missing', live: false, inRoster: false },
  ])('unchanged → null: $name', ({ live, inRoster }) => {
    expect(livenessChange(machine({ heartbeatLive: live }), inRoster, previousRoster, now)).toBeNull();
  });

  it('leaving the roster keeps the previous roster time as the last heartbeat', () => {
    const before = machine({ heartbeatLive: true, lastHeartbeatAt: iso(T0) });
    expect(livenessChange(before, false, previousRoster, now)).toEqual({
      ...before,
      heartbeatLive: false,
      lastHeartbeatAt: previousRoster,
      updatedAt: iso(now),
    });
  });

  it('leaving with no previous roster keeps its own last heartbeat', () => {
    const before = machine({ heartbeatLive: true, lastHeartbeatAt: iso(T0) });
    const next = livenessChange(before, false, undefined, now);
    expect(next!.lastHeartbeatAt).toBe(iso(T0));
    expect(next!.heartbeatLive).toBe(false);
  });

  it('leaving having never been seen keeps no last heartbeat', () => {
    expect(livenessChange(machine({ heartbeatLive: true }), false, undefined, now)!.lastHeartbeatAt).toBeUndefined();
  });

  it('resuming sets the last heartbeat to now', () => {
    const before = machine({ heartbeatLive: false, lastHeartbeatAt: iso(T0) });
    expect(livenessChange(before, true, previousRoster, now)).toEqual({ ...before, heartbeatLive: true, lastHeartbeatAt: iso(now), updatedAt: iso(now) });
  });

  it('with the timeout, a machine leaving the roster is due exactly when its heartbeat first counts as stale', () => {
    const before = machine({ heartbeatLive: true, lastHeartbeatAt: iso(T0) });
    const next = livenessChange(before, false, previousRoster, now, TIMEOUT_MS)!;
    expect(next.heartbeatStaleAt).toBe(iso(addMs(new Date(previousRoster), TIMEOUT_MS + 1)));
    const view = { rosterSeenAt: iso(now), timeoutMs: TIMEOUT_MS };
    expect(heartbeatStale(next, view, addMs(new Date(next.heartbeatStaleAt!), -1))).toBe(false);
    expect(heartbeatStale(next, view, new Date(next.heartbeatStaleAt!))).toBe(true);
  });

  it('resuming clears the stale time', () => {
    const before = machine({ heartbeatLive: false, lastHeartbeatAt: iso(T0), heartbeatStaleAt: iso(addMs(T0, TIMEOUT_MS + 1)) });
    expect(livenessChange(before, true, previousRoster, now, TIMEOUT_MS)!.heartbeatStaleAt).toBeUndefined();
  });

  it('keeps the version as read (the store guards on it) and does not touch the input', () => {
    const before = machine({ heartbeatLive: false, version: 11 });
    const snapshot = structuredClone(before);
    expect(livenessChange(before, true, undefined, now)!.version).toBe(11);
    expect(before).toEqual(snapshot);
  });
});
