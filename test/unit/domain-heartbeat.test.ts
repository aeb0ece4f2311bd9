import { describe, expect, it } from 'vitest';
import { livenessChange, planHeartbeat, REFRESH_DIVISOR, rosterDigest, type SiteHeartbeat } from '#domain/heartbeat.ts';
import { heartbeatStale } from '#domain/health.ts';
import type { Machine } from '#domain/model.ts';
import { addMs, iso } from '#domain/time.ts';
import { aMachine, T0 } from '#test/support/fixtures.ts';

const TIMEOUT_MS = 30_000;

const machine = (over: Partial<Machine> = {}): Machine => aMachine({ version: 2, ...over });

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

describe('planHeartbeat', () => {
  const digest = rosterDigest(['a', 'b']);
  const stored: SiteHeartbeat = { rosterSeenAt: iso(T0), digest, machineCount: 2, version: 7 };
  const third = TIMEOUT_MS / REFRESH_DIVISOR;

  it('refreshes three times per timeout', () => {
    expect(REFRESH_DIVISOR).toBe(3);
  });

  it.each([
    { name: 'nothing stored yet', stored: null, digest, age: 0, kind: 'reconcile-roster' },
    { name: 'roster changed, even when fresh', stored, digest: rosterDigest(['a']), age: 0, kind: 'reconcile-roster' },
    { name: 'roster reset by a registration', stored: { ...stored, digest: 'reset' }, digest, age: 0, kind: 'reconcile-roster' },
    { name: 'roster changed while another beat walks it, fresh', stored: { ...stored, reconcilingUntil: iso(new Date(T0.getTime() + TIMEOUT_MS)) }, digest: rosterDigest(['a']), age: 0, kind: 'nothing' },
    { name: 'roster changed while another beat walks it, due', stored: { ...stored, reconcilingUntil: iso(new Date(T0.getTime() + TIMEOUT_MS)) }, digest: rosterDigest(['a']), age: third, kind: 'refresh' },
    { name: 'roster changed and the walk claim lapsed', stored: { ...stored, reconcilingUntil: iso(T0) }, digest: rosterDigest(['a']), age: 1, kind: 'reconcile-roster' },
    { name: 'same roster, just stored', stored, digest, age: 0, kind: 'nothing' },
    { name: 'same roster, just under timeout/3', stored, digest, age: third - 1, kind: 'nothing' },
    { name: 'same roster, exactly timeout/3', stored, digest, age: third, kind: 'refresh' },
    { name: 'same roster, past timeout/3', stored, digest, age: third + 1, kind: 'refresh' },
    { name: 'same roster, long past the timeout', stored, digest, age: 10 * TIMEOUT_MS, kind: 'refresh' },
  ])('$name → $kind', ({ stored, digest, age, kind }) => {
    expect(planHeartbeat(stored, digest, addMs(T0, age), TIMEOUT_MS)).toEqual({ kind });
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
    const change = livenessChange(before, false, previousRoster, now);
    expect(change).not.toBeNull();
    expect(change!.next).toEqual({ ...before, heartbeatLive: false, lastHeartbeatAt: previousRoster, updatedAt: iso(now) });
    expect(change!.history).toEqual({
      machineId: 'm-1',
      at: iso(now),
      actor: 'site-agent',
      action: 'heartbeat-stopped',
      changes: { heartbeatLive: { from: true, to: false } },
      message: `last seen ${previousRoster}`,
    });
  });

  it('leaving with no previous roster keeps its own last heartbeat', () => {
    const before = machine({ heartbeatLive: true, lastHeartbeatAt: iso(T0) });
    const change = livenessChange(before, false, undefined, now);
    expect(change!.next.lastHeartbeatAt).toBe(iso(T0));
    expect(change!.next.heartbeatLive).toBe(false);
    expect(change!.history.message).toBe(`last seen ${iso(T0)}`);
  });

  it('leaving having never been seen says so', () => {
    const change = livenessChange(machine({ heartbeatLive: true }), false, undefined, now);
    expect(change!.next.lastHeartbeatAt).toBeUndefined();
    expect(change!.history.message).toBe('last seen never');
  });

  it('resuming sets the last heartbeat to now', () => {
    const before = machine({ heartbeatLive: false, lastHeartbeatAt: iso(T0) });
    const change = livenessChange(before, true, previousRoster, now);
    expect(change!.next).toEqual({ ...before, heartbeatLive: true, lastHeartbeatAt: iso(now), updatedAt: iso(now) });
    expect(change!.history).toEqual({
      machineId: 'm-1',
      at: iso(now),
      actor: 'site-agent',
      action: 'heartbeat-resumed',
      changes: { heartbeatLive: { from: false, to: true } },
    });
  });

  it('with the timeout, a machine leaving the roster is due exactly when its heartbeat first counts as stale', () => {
    const before = machine({ heartbeatLive: true, lastHeartbeatAt: iso(T0) });
    const next = livenessChange(before, false, previousRoster, now, TIMEOUT_MS)!.next;
    expect(next.heartbeatStaleAt).toBe(iso(addMs(new Date(previousRoster), TIMEOUT_MS + 1)));
    const view = { rosterSeenAt: iso(now), timeoutMs: TIMEOUT_MS };
    expect(heartbeatStale(next, view, addMs(new Date(next.heartbeatStaleAt!), -1))).toBe(false);
    expect(heartbeatStale(next, view, new Date(next.heartbeatStaleAt!))).toBe(true);
  });

  it('resuming clears the stale time', () => {
    const before = machine({ heartbeatLive: false, lastHeartbeatAt: iso(T0), heartbeatStaleAt: iso(addMs(T0, TIMEOUT_MS + 1)) });
    expect(livenessChange(before, true, previousRoster, now, TIMEOUT_MS)!.next.heartbeatStaleAt).toBeUndefined();
  });

  it('keeps the version as read (the store guards on it) and does not touch the input', () => {
    const before = machine({ heartbeatLive: false, version: 11 });
    const snapshot = structuredClone(before);
    const change = livenessChange(before, true, undefined, now);
    expect(change!.next.version).toBe(11);
    expect(before).toEqual(snapshot);
  });
});
