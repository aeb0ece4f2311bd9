import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  capacityMovesOf,
  contiguousAfter,
  feedEntriesOf,
  standingOf,
  type CapacityFeedEntry,
  type CapacityMove,
  type CapacityStanding,
} from '#domain/capacity/capacity-events.ts';
import { MAX_TRANSACTION_ITEMS } from '#domain/core/change.ts';
import type { HealthOverride, Instance, Machine } from '#domain/core/model.ts';
import { capacityChange, type CapacityNode } from '#domain/capacity/org-capacity.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import { writesOf } from '#store/writes.ts';
import { withValidationStarted, type ValidationReason } from '#domain/repair/validation.ts';
import { iso } from '#domain/core/time.ts';
import { aMachine, anInstance, aRepairRequest, AT, NOW, T0 } from '#test/support/fixtures.ts';

const maintenance: HealthOverride = {
  source: 'maintenance',
  mode: 'merge',
  alerts: [{ id: 'Maintenance', target: 'm-1', message: 'maintenance mnt-1 (planned, firmware): bios', classifications: ['PreventAllocations'] }],
  createdBy: 'ops',
  createdAt: AT,
};
const reserved = { id: 'res-1', org: 'acme' };
/** The fields of a machine of the reservation whose validation (for `reason`) is running: the record and its override. */
const validating = (reason: ValidationReason): Partial<Machine> => {
  const { validation, healthOverrides } = withValidationStarted(aMachine({ reservation: reserved }), {
    id: 'v-1',
    reason,
    suite: 's',
    actor: 'ops',
    at: AT,
  }).machine;
  return { reservation: reserved, validation, healthOverrides };
};
const held = (status: Instance['status'] = 'Ready', org = 'acme') => anInstance({ status, org });
const on = (machine: Partial<Machine>, instance: Instance | null = null) =>
  standingOf(aMachine({ ...(instance ? { instanceId: instance.id, state: 'Assigned' as const, assignedAt: AT } : {}), ...machine }), instance);

/** The moves of each step of a machine walking through these standings, from none. */
function steps(...standings: CapacityStanding[]): CapacityMove[][] {
  let before: CapacityStanding | null = null;
  return standings.map((after) => {
    const moves = capacityMovesOf(before, after);
    before = after;
    return moves;
  });
}

const walk = (...standings: CapacityStanding[]): CapacityMove[] => steps(...standings).flat();
const acme = (change: CapacityMove['change'], reason: CapacityMove['reason']): CapacityMove[] => [{ org: 'acme', change, reason }];

describe('capacity events', () => {
  it('a reserved machine is delivered with its reservation, withdrawn for repair and back, and withdrawn when it leaves', () => {
    expect(
      steps(
        on({}),
        on({ reservation: reserved }),
        on({ reservation: reserved, healthOverrides: [aRepairRequest()] }),
        on(validating('repair')),
        on({ reservation: reserved }),
        on({}),
      ),
    ).toEqual([
      [],
      acme('delivered', 'reservation'),
      acme('withdrawn', 'repair'),
      [],
      acme('delivered', 'repair-return'),
      acme('withdrawn', 'reservation-released'),
    ]);
  });

  it('declared maintenance takes a held machine at its hand-back, not while the org still holds it', () => {
    expect(
      steps(
        on({ reservation: reserved }, held()),
        on({ reservation: reserved, healthOverrides: [maintenance] }, held()),
        on({ reservation: reserved, healthOverrides: [maintenance], state: 'Cleanup' }, held('Terminating')),
        on(validating('maintenance')),
        on({ reservation: reserved }),
      ),
    ).toEqual([acme('delivered', 'reservation'), [], acme('withdrawn', 'maintenance'), [], acme('delivered', 'maintenance-return')]);
  });

  it("an org's own create and release of an unreserved machine are no entries; the provider taking it is one", () => {
    expect(walk(on({}), on({}, held('Provisioning')), on({}, held('Ready')), on({ state: 'Cleanup' }, held('Terminating')), on({}))).toEqual([]);
    expect(walk(on({}, held()), on({ state: 'Cleanup', healthOverrides: [aRepairRequest()] }, held('Terminating')))).toEqual([
      { org: 'acme', change: 'withdrawn', reason: 'repair' },
    ]);
    expect(
      walk(on({}, held()), on({ healthOverrides: [maintenance] }, held()), on({ state: 'Cleanup', healthOverrides: [maintenance] }, held('Terminating'))),
    ).toEqual([{ org: 'acme', change: 'withdrawn', reason: 'maintenance' }]);
  });

  it('a look that comes only after the cleanup tells the provider took the machine while its instance held it, and only then', () => {
    const [assigned, taken, ended] = [AT, iso(new Date(T0.getTime() + 1_000)), iso(new Date(T0.getTime() + 2_000))];
    const before = standingOf(aMachine({ instanceId: 'i-1', state: 'Assigned', assignedAt: assigned }), anInstance({ status: 'Ready', createdAt: assigned }));
    const over = anInstance({ status: 'Terminated', createdAt: assigned, updatedAt: ended });
    const freeWith = (createdAt: string) => standingOf(aMachine({ healthOverrides: [{ ...aRepairRequest(), createdAt }] }), null, over);
    expect(before).toMatchObject({ holder: 'acme', heldBy: 'i-1' });
    expect(capacityMovesOf(before, freeWith(taken))).toEqual(acme('withdrawn', 'repair'));
    // Taken after its hold ended, or before it began: the org had let go of it, or never had it in service.
    expect(capacityMovesOf(before, freeWith(iso(new Date(T0.getTime() + 3_000))))).toEqual([]);
    expect(capacityMovesOf(before, freeWith(iso(new Date(T0.getTime() - 1_000))))).toEqual([]);
    // Without the instance that held it, the machine free and out says nothing of whom it was taken from.
    expect(capacityMovesOf(before, standingOf(aMachine({ healthOverrides: [{ ...aRepairRequest(), createdAt: taken }] }), null))).toEqual([]);
  });

  it("a repair tenant's claim and release of a reserved machine are no entries of its own; the machine comes back to the reservation", () => {
    const repairing = (status: Instance['status']) => held(status, 'fixit');
    const claimed = iso(NOW);
    expect(
      walk(
        on({ reservation: reserved }),
        on({ reservation: reserved, healthOverrides: [aRepairRequest()] }),
        on({ reservation: reserved, healthOverrides: [aRepairRequest()], assignedAt: claimed }, repairing('Ready')),
        on({ reservation: reserved, state: 'Cleanup', assignedAt: claimed }, repairing('Terminating')),
        on({ reservation: reserved }),
      ),
    ).toEqual([
      { org: 'acme', change: 'delivered', reason: 'reservation' },
      { org: 'acme', change: 'withdrawn', reason: 'repair' },
      { org: 'acme', change: 'delivered', reason: 'repair-return' },
    ]);
  });

  it('a retired machine is withdrawn as retired, also when its reservation goes with it', () => {
    const retired = { at: AT, by: 'ops', reason: 'end of life' };
    expect(walk(on({ reservation: reserved }), on({ retired }))).toEqual([
      { org: 'acme', change: 'delivered', reason: 'reservation' },
      { org: 'acme', change: 'withdrawn', reason: 'retired' },
    ]);
  });

  it('a reservation released under a running instance is withdrawn then, and the later release is no entry', () => {
    expect(walk(on({ reservation: reserved }, held()), on({}, held()), on({ state: 'Cleanup' }, held('Terminating')))).toEqual([
      { org: 'acme', change: 'delivered', reason: 'reservation' },
      { org: 'acme', change: 'withdrawn', reason: 'reservation-released' },
    ]);
  });

  const orgs = ['acme', 'globex'] as const;
  const outs = [undefined, 'repair', 'maintenance', 'retired'] as const;
  /** Standings of a machine that only reservations give to orgs (held, if at all, by its reservation's org). */
  const reservedStanding = fc.record({ org: fc.constantFrom(undefined, ...orgs), out: fc.constantFrom(...outs), held: fc.boolean() }).map(
    ({ org, out, held: isHeld }): CapacityStanding => ({
      ...(org && isHeld ? { holder: org } : {}),
      ...(org ? { reservation: { id: `res-${org}`, org } } : {}),
      ...(out ? { out } : {}),
    }),
  );
  const anyStanding = fc
    .record({ holder: fc.constantFrom(undefined, ...orgs), reservation: fc.constantFrom(undefined, ...orgs), out: fc.constantFrom(...outs) })
    .map(
      ({ holder, reservation, out }): CapacityStanding => ({
        ...(holder ? { holder } : {}),
        ...(reservation ? { reservation: { id: `res-${reservation}`, org: reservation } } : {}),
        ...(out ? { out } : {}),
      }),
    );

  it('per org, a reserved machine is delivered and withdrawn in turn, and the last entry says whether the org has it', () => {
    fc.assert(
      fc.property(fc.array(reservedStanding, { maxLength: 30 }), (standings) => {
        const moves = walk(...standings);
        for (const org of orgs) {
          const mine = moves.filter((m) => m.org === org).map((m) => m.change);
          expect(mine).toEqual(mine.map((_, i) => (i % 2 === 0 ? 'delivered' : 'withdrawn')));
          const last = standings.at(-1);
          const serves = last?.reservation?.org === org && !last.out;
          expect(mine.at(-1) === 'delivered').toBe(serves);
        }
      }),
    );
  });

  it('every move has a reason of its kind, and a standing that did not change moves nothing', () => {
    const delivered = new Set(['reservation', 'repair-return', 'maintenance-return']);
    fc.assert(
      fc.property(fc.option(anyStanding, { nil: null }), anyStanding, (before, after) => {
        for (const move of capacityMovesOf(before, after)) {
          expect(delivered.has(move.reason)).toBe(move.change === 'delivered');
        }
        expect(capacityMovesOf(after, structuredClone(after))).toEqual([]);
        const moves = capacityMovesOf(before, after);
        expect(moves.filter((m) => m.change === 'delivered').length).toBeLessThanOrEqual(1);
      }),
    );
  });

  it("numbers each org's entries on from its head without gaps, with ids that depend only on the machine's change", () => {
    const moves = [
      { machineId: 'm-1', machineType: 'gb200', nodeVersion: 4, moves: [{ org: 'acme', change: 'withdrawn' as const, reason: 'repair' as const }] },
      {
        machineId: 'm-2',
        machineType: 'gb200',
        nodeVersion: 0,
        moves: [
          { org: 'acme', change: 'withdrawn' as const, reason: 'reservation-released' as const },
          { org: 'globex', change: 'delivered' as const, reason: 'reservation' as const },
        ],
      },
    ];
    const { entries, events } = feedEntriesOf(moves, new Map([['acme', 7]]), AT);
    expect(entries.map((e) => [e.org, e.seq, e.machineId])).toEqual([
      ['acme', 8, 'm-1'],
      ['acme', 9, 'm-2'],
      ['globex', 1, 'm-2'],
    ]);
    expect(feedEntriesOf(moves, new Map(), AT).entries.map((e) => e.id)).toEqual(entries.map((e) => e.id));
    expect(new Set(entries.map((e) => e.id)).size).toBe(3);
    expect(events.map((e) => [e.machineId, e.event?.type, e.event?.detail.entryId])).toEqual(
      entries.map((e) => [e.machineId, `Capacity${e.change === 'delivered' ? 'Delivered' : 'Withdrawn'}`, e.id]),
    );
  });

  it('a page stops before the first number it did not read, so a cursor never passes an entry still to come', () => {
    const entry = (seq: number) => ({ seq }) as CapacityFeedEntry;
    expect(contiguousAfter(3, [entry(4), entry(5), entry(7)]).map((e) => e.seq)).toEqual([4, 5]);
    expect(contiguousAfter(3, [entry(5), entry(6)])).toEqual([]);
    expect(contiguousAfter(0, [entry(2), entry(1)]).map((e) => e.seq)).toEqual([1, 2]);
  });
});

describe('a batch of capacity changes', () => {
  it('commits what fits one transaction and leaves the rest for the next pass, until every machine is in line', () => {
    const ids = Array.from({ length: 30 }, (_, i) => `m-${i}`);
    const machines = new Map(ids.map((id) => [id, aMachine({ id, reservation: { id: 'rsv-g', org: 'globex' } })]));
    const acme = (id: string) => standingOf(aMachine({ id, reservation: { id: 'rsv-a', org: 'acme' } }), null);
    const nodes = new Map<string, CapacityNode>(ids.map((id) => [id, { machineId: id, entry: null, standing: acme(id), version: 3 }]));
    const heads = new Map([
      ['acme', 0],
      ['globex', 0],
    ]);
    const entries: CapacityFeedEntry[] = [];
    for (let pass = 1; pass <= 3; pass++) {
      const { change, deferred } = capacityChange({ machineIds: ids, machines, instances: new Map(), nodes, shards: new Map(), feedHeads: heads, now: AT });
      if (!change) break;
      expect(writesOf(change, () => 'u', dueTimes).length).toBeLessThanOrEqual(MAX_TRANSACTION_ITEMS);
      for (const { after } of change.orgCapacity!.nodes) nodes.set(after.machineId, { ...after, version: after.version + 1 });
      for (const entry of change.capacityFeed ?? []) heads.set(entry.org, entry.seq);
      entries.push(...(change.capacityFeed ?? []));
      expect(deferred.length > 0).toBe(nodes.size > 0 && [...nodes.values()].some((n) => n.standing?.reservation?.org === 'acme'));
    }
    expect(entries.filter((e) => e.org === 'acme').map((e) => [e.machineId, e.change, e.reason])).toEqual(
      ids.map((id) => [id, 'withdrawn', 'reservation-released']),
    );
    expect(entries.filter((e) => e.org === 'globex').map((e) => e.seq)).toEqual(ids.map((_, i) => i + 1));
  });
});
