import { describe, expect, it } from 'vitest';
import type { HeartbeatView } from '#domain/core/health.ts';
import type { Machine } from '#domain/core/model.ts';
import { Rejection } from '#domain/core/rejection.ts';
import {
  claimStep,
  handBackChunk,
  handBackStep,
  newReservation,
  RESERVATION_CHUNK,
  release,
  reserveAtOnce,
  resolveDomains,
  type Reservation,
  type ReservationAsk,
} from '#domain/reservations/reservations.ts';
import { capacityChange, capacityEntryOf, reservationHealth } from '#domain/capacity/org-capacity.ts';
import { choosePlacement } from '#domain/meta-instances/placement.ts';
import { aMachine, aMetaInstance, AT, NOW } from '#test/support/fixtures.ts';

const heartbeat: HeartbeatView = { rosterSeenAt: AT, timeoutMs: 3_600_000 };
const machines = (n: number, overrides: Partial<Machine> = {}) =>
  Array.from({ length: n }, (_, i) => aMachine({ id: `m-${String(i).padStart(4, '0')}`, ...overrides }));
const pending = (ask: ReservationAsk, wanted: number): Reservation => newReservation('rsv-1', { org: 'acme', machineType: 'gb200', ask, wanted }, 'ops', NOW);
const reservationOf = (change: { reservations?: Array<{ after: Reservation }> }) => change.reservations![0]!.after;
const refusal = (fn: () => unknown): Rejection => {
  try {
    fn();
  } catch (error) {
    if (error instanceof Rejection) return error;
  }
  throw new Error('not refused');
};

describe('a reservation decided at once', () => {
  it('by count takes the first free machines of its type and leaves the rest', () => {
    const [busy, other, ...free] = [
      aMachine({ id: 'm-busy', instanceId: 'i-1', state: 'Assigned' }),
      aMachine({ id: 'm-h100', machineType: 'h100' }),
      ...machines(4),
    ];
    const change = reserveAtOnce(pending({ count: 3 }, 3), [busy!, other!, ...free], heartbeat, NOW);
    expect(reservationOf(change)).toMatchObject({ state: 'Active', machineIds: ['m-0000', 'm-0001', 'm-0002'] });
    expect(reservationOf(change).work).toBeUndefined();
    expect(change.machines!.map((m) => m.after.reservation)).toEqual(Array(3).fill({ id: 'rsv-1', org: 'acme' }));
    expect(change.history.map((h) => h.action)).toEqual(['reserved', 'reserved', 'reserved']);
  });

  it('is all or nothing: too few free is 409 insufficient-capacity with what was wanted and what was free', () => {
    const error = refusal(() => reserveAtOnce(pending({ count: 5 }, 5), machines(3), heartbeat, NOW));
    expect(error).toMatchObject({ status: 409, code: 'insufficient-capacity', shortfall: { wanted: 5, free: 3 } });
  });

  it('by machine ids needs every one of them free: one reserved elsewhere refuses them all', () => {
    const named = [...machines(2), aMachine({ id: 'm-taken', reservation: { id: 'rsv-0', org: 'other' } })];
    const error = refusal(() => reserveAtOnce(pending({ machineIds: named.map((m) => m.id) }, 3), named, heartbeat, NOW));
    expect(error).toMatchObject({ code: 'insufficient-capacity', shortfall: { wanted: 3, free: 2 } });
  });

  it('never takes a machine whose heartbeat is stale or that a health override keeps out', () => {
    const stale = aMachine({ id: 'm-stale', heartbeatLive: false, lastHeartbeatAt: '2000-01-01T00:00:00.000Z' });
    const held = aMachine({
      id: 'm-held',
      healthOverrides: [
        { source: 'ops', mode: 'merge', alerts: [{ id: 'a', message: 'x', classifications: ['PreventAllocations'] }] },
      ] as Machine['healthOverrides'],
    });
    expect(refusal(() => reserveAtOnce(pending({ count: 1 }, 1), [stale, held], heartbeat, NOW)).code).toBe('insufficient-capacity');
  });
});

describe('a large reservation, one step at a time', () => {
  it('by count claims a chunk per step and ends Active holding exactly what it asked for', () => {
    let r = pending({ count: 60 }, 60);
    const pool = machines(80);
    const first = claimStep(r, { candidates: pool.slice(0, 65), exhausted: false, nextToken: 't1' }, heartbeat, NOW);
    r = { ...reservationOf(first), version: 1 };
    expect(r.machineIds).toHaveLength(RESERVATION_CHUNK);
    expect(first.machines).toHaveLength(RESERVATION_CHUNK);
    // Free machines of that page were left: the read starts at the same place again, not past them.
    expect(r.work).toEqual({ kind: 'claim' });
    const second = claimStep(r, { candidates: pool.slice(RESERVATION_CHUNK), exhausted: true }, heartbeat, NOW);
    expect(reservationOf(second)).toMatchObject({ state: 'Active' });
    expect(reservationOf(second).machineIds).toEqual(pool.slice(0, 60).map((m) => m.id));
  });

  it('that falls short undoes its claims a chunk per step, then is Failed holding nothing, with wanted and free kept', () => {
    const claimed = machines(60).map((m) => ({ ...m, reservation: { id: 'rsv-1', org: 'acme' } }));
    const r: Reservation = { ...pending({ count: 100 }, 100), machineIds: claimed.map((m) => m.id) };
    const short = reservationOf(
      claimStep(r, { candidates: machines(5, { rack: 'r9' }).map((m) => ({ ...m, id: `${m.id}-x` })), exhausted: true }, heartbeat, NOW),
    );
    expect(short).toMatchObject({ state: 'Pending', free: 65, work: { kind: 'undo' } });
    const byId = new Map(claimed.map((m) => [m.id, m]));
    const undo1 = handBackStep(short, byId, NOW)!;
    expect(undo1.machines!.every((m) => m.after.reservation === undefined)).toBe(true);
    expect(reservationOf(undo1).machineIds).toHaveLength(60 - RESERVATION_CHUNK);
    const undo2 = handBackStep(reservationOf(undo1), byId, NOW)!;
    expect(reservationOf(undo2)).toMatchObject({ state: 'Failed', machineIds: [], wanted: 100, free: 65 });
    expect(reservationOf(undo2).work).toBeUndefined();
  });

  it('never hands back a machine that is no longer its own', () => {
    const mine = aMachine({ id: 'm-a', reservation: { id: 'rsv-1', org: 'acme' } });
    const theirs = aMachine({ id: 'm-b', reservation: { id: 'rsv-2', org: 'acme' } });
    const r: Reservation = { ...pending({ count: 2 }, 2), machineIds: ['m-a', 'm-b'], work: { kind: 'undo' } };
    expect(handBackChunk(r)).toEqual(['m-a', 'm-b']);
    const step = handBackStep(r, new Map([mine, theirs].map((m) => [m.id, m])), NOW)!;
    expect(step.machines!.map((m) => m.after.id)).toEqual(['m-a']);
  });

  it('by named machines fails at the first chunk holding one that is not free', () => {
    const r = pending({ machineIds: ['m-0000', 'm-0001', 'm-gone'] }, 3);
    const step = claimStep(r, { candidates: machines(2), exhausted: true, unknown: 1 }, heartbeat, NOW);
    expect(reservationOf(step)).toMatchObject({ state: 'Failed', free: 2 });
    expect(step.machines).toEqual([]);
  });

  it('of whole NVLink domains resolves them to their machines, or fails when a domain is not wholly free', () => {
    const domain = (name: string, n: number) => machines(n).map((m) => ({ ...m, id: `${name}-${m.id}`, nvlinkDomain: name }));
    const r = pending({ nvlinkDomains: ['d1', 'd2'] }, 8);
    const resolved = reservationOf(
      resolveDomains(
        r,
        [
          { domain: 'd1', size: 4, free: domain('d1', 4) },
          { domain: 'd2', size: 4, free: domain('d2', 4) },
        ],
        heartbeat,
        NOW,
      ),
    );
    expect(resolved.work).toEqual({ kind: 'claim', targets: [...domain('d1', 4), ...domain('d2', 4)].map((m) => m.id) });
    const partial = reservationOf(
      resolveDomains(
        r,
        [
          { domain: 'd1', size: 4, free: domain('d1', 4) },
          { domain: 'd2', size: 4, free: domain('d2', 3) },
        ],
        heartbeat,
        NOW,
      ),
    );
    expect(partial).toMatchObject({ state: 'Failed', wanted: 8, free: 7 });
  });
});

describe('a released reservation', () => {
  it('hands its machines back at once when they fit one change, leaving an instance on its machine', () => {
    const held = aMachine({ id: 'm-a', instanceId: 'i-1', state: 'Assigned', reservation: { id: 'rsv-1', org: 'acme' } });
    const r: Reservation = { ...pending({ count: 1 }, 1), state: 'Active', machineIds: ['m-a'], work: undefined };
    const change = release(r, new Map([['m-a', held]]), NOW)!;
    expect(reservationOf(change)).toMatchObject({ state: 'Released', machineIds: ['m-a'], releasedAt: expect.any(String) });
    expect(change.machines![0]!.after).toMatchObject({ instanceId: 'i-1', state: 'Assigned' });
    expect(change.machines![0]!.after.reservation).toBeUndefined();
    expect(release(reservationOf(change), null, NOW)).toBeNull();
  });

  it('leaves a large hand-back to the reconciler', () => {
    const ids = machines(120).map((m) => m.id);
    const r: Reservation = { ...pending({ count: 120 }, 120), state: 'Active', machineIds: ids, work: undefined };
    const change = release(r, null, NOW)!;
    expect(reservationOf(change).work).toEqual({ kind: 'return', left: ids });
    expect(change.machines).toEqual([]);
  });

  it('cannot be released once Failed', () => {
    const r: Reservation = { ...pending({ count: 1 }, 1), state: 'Failed', work: undefined };
    expect(refusal(() => release(r, null, NOW)).code).toBe('reservation-failed');
  });
});

describe('allocation and health of reserved machines', () => {
  it("a meta-instance places on its org's reserved machines first, and never on another org's", () => {
    const shared = machines(3);
    const mine = machines(2).map((m) => ({ ...m, id: `${m.id}-r`, reservation: { id: 'rsv-1', org: 'acme' } }));
    const theirs = aMachine({ id: 'm-theirs', reservation: { id: 'rsv-2', org: 'other' } });
    const plan = choosePlacement(aMetaInstance({ minNodes: 3 }), [], [...shared, ...mine], new Map(), () => []);
    expect(plan).toMatchObject({ kind: 'place' });
    expect(plan.kind === 'place' && plan.machines.slice(0, 2).map((m) => m.id)).toEqual(mine.map((m) => m.id));
    const pinned = choosePlacement(aMetaInstance({ machineIds: ['m-theirs'] }), [], [], new Map([['m-theirs', theirs]]), (m) =>
      m.reservation?.org === 'other' ? ['reserved'] : [],
    );
    expect(pinned).toMatchObject({ kind: 'error', shortOfCapacity: false });
  });

  it("counts a reservation's machines, in use, quarantined and healthy in its org's counters", () => {
    const reserved = { id: 'rsv-1', org: 'acme' };
    const fit = aMachine({ id: 'm-a', reservation: reserved });
    const sick = aMachine({
      id: 'm-b',
      reservation: reserved,
      healthOverrides: [
        { source: 'ops', mode: 'merge', alerts: [{ id: 'a', message: 'x', classifications: ['PreventAllocations'] }] },
      ] as Machine['healthOverrides'],
    });
    expect(capacityEntryOf(fit, null)).toMatchObject({ reserved: true, reservationId: 'rsv-1' });
    const { change } = capacityChange({
      machineIds: ['m-a', 'm-b'],
      machines: new Map([fit, sick].map((m) => [m.id, m])),
      instances: new Map(),
      nodes: new Map(),
      shards: new Map(),
      feedHeads: new Map(),
      now: '2026-11-27T12:00:00.000Z',
    });
    const shards = change!.orgCapacity!.shards.map((s) => ({ ...s.after, version: 0 }));
    expect(reservationHealth(shards, 'rsv-1', heartbeat, NOW)).toEqual({ machines: 2, healthy: 1, inUse: 0, quarantined: 1 });
    expect(reservationHealth(shards, 'rsv-other', heartbeat, NOW)).toEqual({ machines: 0, healthy: 0, inUse: 0, quarantined: 0 });
  });
});
