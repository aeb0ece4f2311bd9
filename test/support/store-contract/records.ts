import { describe, expect, it } from 'vitest';
import type { Change } from '#domain/core/change.ts';
import { bucketWithRoster, type RosterBucket } from '#domain/machines/heartbeat.ts';
import { assignInstance } from '#domain/instances/instances.ts';
import { registerMachine } from '#domain/machines/machines.ts';
import type { HistoryEntry } from '#domain/core/model.ts';
import { iso } from '#domain/core/time.ts';
import { publishedEvent, repairEvent } from '#domain/events/events.ts';
import { ROSTER_WALK_GRACE_MS } from '#reconcilers/due-times.ts';
import { StaleWriteError } from '#store/port.ts';
import { aMachine, aMetaInstance, T0 } from '../fixtures.ts';
import type { ContractKit } from './kit.ts';

export function recordsContract(kit: ContractKit): void {
  const { at, machine, instance, create, register, allHistory, rejectionOf, newStore } = kit;

  describe('commit', () => {
    it('writes records and their history entries in one transaction, versions starting at 0', async () => {
      const a = registerMachine(null, { id: 'c-a', machineType: 'gb200', rack: 'r1', labels: { x: '1' } }, 'ops', T0)!;
      const b = registerMachine(null, { id: 'c-b', machineType: 'h100', rack: 'r2' }, 'ops', T0)!;
      const noted = (machineId: string): HistoryEntry => ({ machineId, at: iso(T0), actor: 'ops', action: 'noted' });
      await kit.store.commit({ machines: [...a.machines!, ...b.machines!], history: [noted('c-a'), noted('c-b')] });

      expect(await kit.store.getMachine('c-a')).toEqual({ ...a.machines![0]!.after, version: 0 });
      expect(await kit.store.getMachine('c-b')).toEqual({ ...b.machines![0]!.after, version: 0 });
      expect(await allHistory('c-a')).toEqual([noted('c-a')]);
      expect(await allHistory('c-b')).toEqual([noted('c-b')]);

      const read = (await kit.store.getMachine('c-a'))!;
      const { change, instance: created } = assignInstance(
        read,
        { id: 'c-i', org: 'acme', name: 'job', labels: {}, clientToken: 'ct', createdBy: 'alice' },
        at(1_000),
      );
      await kit.store.commit(change);

      expect(await kit.store.getMachine('c-a')).toEqual({ ...change.machines![0]!.after, version: 1 });
      expect(await kit.store.getInstance('c-i')).toEqual({ ...created, version: 0 });
      expect((await allHistory('c-a')).map((h) => h.action)).toEqual(['instance-created', 'noted']);
    });

    it('a stale before.version raises StaleWriteError and writes nothing of the change', async () => {
      const a = await register('s-a');
      const b = await register('s-b');
      const stale = a;
      // Someone else updates s-a after our read.
      await kit.store.commit(registerMachine(a, { id: 's-a', machineType: 'gb200', labels: { touched: 'yes' } }, 'other', at(1_000))!);
      const current = (await kit.store.getMachine('s-a'))!;
      expect(current.version).toBe(1);
      const historyBefore = { a: await allHistory('s-a'), b: await allHistory('s-b') };

      const { change } = assignInstance(stale, { id: 's-i', org: 'acme', name: 'job', labels: {}, clientToken: 'ct', createdBy: 'alice' }, at(2_000));
      const other = registerMachine(b, { id: 's-b', machineType: 'gb200', rack: 'r9' }, 'ops', at(2_000))!;
      const newcomer = registerMachine(null, { id: 's-new', machineType: 'gb200' }, 'ops', at(2_000))!;
      const combined: Change = {
        machines: [...other.machines!, ...newcomer.machines!, ...change.machines!],
        instances: change.instances!,
        history: [...change.history, ...other.history, ...newcomer.history],
      };

      expect(await rejectionOf(kit.store.commit(combined))).toBeInstanceOf(StaleWriteError);

      expect(await kit.store.getMachine('s-a')).toEqual(current);
      expect(await kit.store.getMachine('s-b')).toEqual(b);
      expect(await kit.store.getMachine('s-new')).toBeNull();
      expect(await kit.store.getInstance('s-i')).toBeNull();
      expect(await allHistory('s-a')).toEqual(historyBefore.a);
      expect(await allHistory('s-b')).toEqual(historyBefore.b);
      expect(await allHistory('s-new')).toEqual([]);
    });

    it('creating a record that exists (before: null) is refused and changes nothing', async () => {
      const existing = await register('dup-m');
      const again = registerMachine(null, { id: 'dup-m', machineType: 'h100', rack: 'r7' }, 'ops', at(5_000))!;
      const noted: HistoryEntry = { machineId: 'dup-m', at: iso(at(5_000)), actor: 'ops', action: 'noted' };
      expect(await rejectionOf(kit.store.commit({ ...again, history: [noted] }))).toBeInstanceOf(StaleWriteError);
      expect(await kit.store.getMachine('dup-m')).toEqual(existing);
      expect(await allHistory('dup-m')).toEqual([]);

      await kit.store.commit({ instances: [create(instance('dup-i'))], history: [] });
      const second = { instances: [create(instance('dup-i', { org: 'evil', status: 'Ready' }))], history: [] };
      expect(await rejectionOf(kit.store.commit(second))).toBeInstanceOf(StaleWriteError);
      expect(await kit.store.getInstance('dup-i')).toEqual(instance('dup-i'));
    });

    it('a record written with a stale version cannot be re-applied: the second of two writers from one read loses', async () => {
      const read = await register('race-m');
      const first = registerMachine(read, { id: 'race-m', machineType: 'gb200', labels: { who: 'first' } }, 'a', at(1_000))!;
      const second = registerMachine(read, { id: 'race-m', machineType: 'gb200', labels: { who: 'second' } }, 'b', at(1_000))!;
      const results = await Promise.allSettled([kit.store.commit(first), kit.store.commit(second)]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect(lost.reason).toBeInstanceOf(StaleWriteError);
      const stored = (await kit.store.getMachine('race-m'))!;
      expect(stored.version).toBe(1);
      expect(['first', 'second']).toContain(stored.labels.who);
      expect((await allHistory('race-m')).map((h) => h.actor)).toEqual([stored.labels.who === 'first' ? 'a' : 'b']);
    });
  });

  describe('transactions', () => {
    it('more writes than one transaction holds are refused before anything is written', async () => {
      const entries: HistoryEntry[] = Array.from({ length: 100 }, (_, i) => ({ machineId: 'tx-big', at: iso(at(i)), actor: 'ops', action: `a${i}` }));
      const error = await rejectionOf(kit.store.commit({ machines: [create(machine('tx-big'))], history: entries }));
      expect(error).toBeInstanceOf(Error);
      expect(error).not.toBeInstanceOf(StaleWriteError);
      expect(await kit.store.getMachine('tx-big')).toBeNull();
      expect(await allHistory('tx-big')).toEqual([]);
      // Exactly the limit fits.
      await kit.store.commit({ machines: [create(machine('tx-big'))], history: entries.slice(1) });
      expect(await allHistory('tx-big')).toHaveLength(99);
    });

    it('one record twice in a transaction is refused and nothing is written', async () => {
      expect(
        await rejectionOf(kit.store.commit({ machines: [create(machine('tx-twice')), create(machine('tx-twice', { rack: 'r2' }))], history: [] })),
      ).toBeInstanceOf(Error);
      expect(await kit.store.getMachine('tx-twice')).toBeNull();
    });
  });

  describe('leases', () => {
    it('one holder at a time: taken while free, refused while held, free again once given back or expired', async () => {
      const fresh = await newStore();
      const [t0, t1, t2, t9] = [0, 1_000, 2_000, 9_000].map((ms) => iso(at(ms))) as [string, string, string, string];
      const both = await Promise.all([fresh.takeLease('job', 'a', t9, t0), fresh.takeLease('job', 'b', t9, t0)]);
      expect(both.filter(Boolean)).toHaveLength(1);
      const holder = both[0] ? 'a' : 'b';
      const other = holder === 'a' ? 'b' : 'a';
      expect(await fresh.takeLease('job', other, t9, t1)).toBe(false);
      // Giving back what one does not hold changes nothing.
      await fresh.releaseLease('job', other, t1);
      expect(await fresh.takeLease('job', other, t9, t1)).toBe(false);
      await fresh.releaseLease('job', holder, t2);
      expect(await fresh.takeLease('job', other, iso(at(3_000)), t2)).toBe(true);
      expect(await fresh.takeLease('job', holder, t9, iso(at(3_000)))).toBe(true);
      expect(await fresh.takeLease('other-job', other, t9, t0)).toBe(true);
    });

    it('renewed only by its holder: a renewal keeps others out past the first hold, and a lapsed hold lets them in', async () => {
      const fresh = await newStore();
      const [t0, t2, t4] = [0, 2_000, 4_000].map((ms) => iso(at(ms))) as [string, string, string];
      expect(await fresh.takeLease('job', 'a', t2, t0)).toBe(true);
      expect(await fresh.renewLease('job', 'b', t4)).toBe(false);
      expect(await fresh.renewLease('job', 'a', t4)).toBe(true);
      expect(await fresh.takeLease('job', 'b', t4, iso(at(3_000)))).toBe(false);
      expect(await fresh.takeLease('job', 'b', iso(at(6_000)), t4)).toBe(true);
      expect(await fresh.renewLease('job', 'a', iso(at(8_000)))).toBe(false);
    });
  });

  describe('the outbox fallback', () => {
    it("reads a day's outbox entries inside a window, oldest first, paged, and the delivery markers of some ids", async () => {
      const fresh = await newStore();
      const machine = aMachine({ id: 'ob-1' });
      const event = (ms: number): HistoryEntry => repairEvent('RepairRequested', machine, { actor: 'ops' }, iso(at(ms)));
      await fresh.commit({ history: [event(3_000), event(1_000), event(2_000), { machineId: 'ob-1', at: iso(at(1_500)), actor: 'ops', action: 'noted' }] });
      const day = iso(at(0)).slice(0, 10);
      const whole = { after: iso(at(0)), until: iso(at(10_000)) };
      const first = await fresh.outboxEntriesOfDay(day, whole, { limit: 2 });
      const rest = await fresh.outboxEntriesOfDay(day, whole, { limit: 2, nextToken: first.nextToken });
      const entries = [...first.items, ...rest.items];
      expect(entries.map((entry) => entry.outbox.entry.at)).toEqual([1_000, 2_000, 3_000].map((ms) => iso(at(ms))));
      // The window holds what comes after its start, up to its end.
      const later = await fresh.outboxEntriesOfDay(day, { after: entries[0]!.position, until: iso(at(2_500)) }, { limit: 10 });
      expect(later.items.map((entry) => entry.position)).toEqual([entries[1]!.position]);

      const ids = entries.map((entry) => publishedEvent(entry.outbox).detail.id);
      expect(await fresh.deliveredEventIds(ids)).toEqual(new Set());
      await fresh.recordEventDelivery(ids[1]!, { machineId: 'ob-1', at: iso(at(4_000)), actor: 'event-bus', action: 'event-delivered', eventId: ids[1]! });
      expect(await fresh.deliveredEventIds(ids)).toEqual(new Set([ids[1]]));
    });

    it('keeps its cursor guarded by version: of two runs moving it from the same read, one wins', async () => {
      const fresh = await newStore();
      expect(await fresh.getOutboxCursor()).toBeNull();
      await fresh.putOutboxCursor(null, 'p1');
      const read = (await fresh.getOutboxCursor())!;
      expect(read).toEqual({ through: 'p1', version: 0 });
      const moves = await Promise.allSettled([fresh.putOutboxCursor(read, 'p2'), fresh.putOutboxCursor(read, 'p3')]);
      expect(moves.filter((move) => move.status === 'rejected').map((move) => (move as PromiseRejectedResult).reason)).toEqual([expect.any(StaleWriteError)]);
      expect((await fresh.getOutboxCursor())?.version).toBe(1);
      await expect(fresh.putOutboxCursor(null, 'p4')).rejects.toThrow(StaleWriteError);
    });
  });

  describe('site heartbeat', () => {
    it('the first write: of two concurrent writers with nothing stored, one wins', async () => {
      const fresh = await newStore();
      expect(await fresh.getSiteHeartbeat()).toBeNull();
      const results = await Promise.allSettled([
        fresh.putSiteHeartbeat(null, { rosterSeenAt: iso(at(0)), machineCount: 1 }),
        fresh.putSiteHeartbeat(null, { rosterSeenAt: iso(at(1)), machineCount: 2 }),
      ]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      expect((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason).toBeInstanceOf(StaleWriteError);
      const stored = (await fresh.getSiteHeartbeat())!;
      expect(stored.version).toBe(1);
      expect([1, 2]).toContain(stored.machineCount);
    });

    it('is guarded by version: of two writers from the same read, one wins and the other gets StaleWriteError', async () => {
      const fresh = await newStore();
      await fresh.putSiteHeartbeat(null, { rosterSeenAt: iso(at(0)), machineCount: 3 });
      const read = (await fresh.getSiteHeartbeat())!;
      expect(read).toEqual({ rosterSeenAt: iso(at(0)), machineCount: 3, version: 1 });
      const results = await Promise.allSettled([
        fresh.putSiteHeartbeat(read, { rosterSeenAt: iso(at(10_000)), machineCount: 4 }),
        fresh.putSiteHeartbeat(read, { rosterSeenAt: iso(at(10_001)), machineCount: 5 }),
      ]);
      const won = results.findIndex((r) => r.status === 'fulfilled');
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      expect((results[1 - won] as PromiseRejectedResult).reason).toBeInstanceOf(StaleWriteError);
      const stored = (await fresh.getSiteHeartbeat())!;
      expect(stored.version).toBe(2);
      expect(stored.machineCount).toBe(won === 0 ? 4 : 5);

      // The loser's read is stale for good.
      expect(await rejectionOf(fresh.putSiteHeartbeat(read, { rosterSeenAt: iso(at(20_000)), machineCount: 1 }))).toBeInstanceOf(StaleWriteError);
      expect((await fresh.getSiteHeartbeat())!.machineCount).toBe(stored.machineCount);
    });

    it("keeps a split roster's parts, and drops them when the roster is whole again", async () => {
      const fresh = await newStore();
      const parts = { count: 2, seenAt: [iso(at(0)), iso(at(5))], machineCounts: [3, 4] };
      await fresh.putSiteHeartbeat(null, { rosterSeenAt: iso(at(0)), machineCount: 7, parts });
      const split = (await fresh.getSiteHeartbeat())!;
      expect(split).toEqual({ rosterSeenAt: iso(at(0)), machineCount: 7, parts, version: 1 });
      await fresh.putSiteHeartbeat(split, { rosterSeenAt: iso(at(9)), machineCount: 7 });
      expect(await fresh.getSiteHeartbeat()).toEqual({ rosterSeenAt: iso(at(9)), machineCount: 7, version: 2 });
    });
  });

  describe('roster buckets and batch reads', () => {
    const bucket = (id: string, ids: string[], version = 0): RosterBucket => ({ ...bucketWithRoster(null, id, ids, iso(at(0)), at(1_000)), version });

    it('getMachines reads many at once, past one BatchGetItem (100 keys), leaving out the unknown ones', async () => {
      const fresh = await newStore();
      const ids = Array.from({ length: 130 }, (_, i) => `bg-${String(i).padStart(3, '0')}`);
      for (let i = 0; i < ids.length; i += 40) {
        await fresh.commit({ machines: ids.slice(i, i + 40).map((id) => ({ before: null, after: aMachine({ id }) })), history: [] });
      }
      const found = await fresh.getMachines([...ids, 'bg-unknown', ids[0]!]);
      expect([...found.keys()].sort()).toEqual(ids);
      expect(found.get('bg-007')).toEqual(aMachine({ id: 'bg-007' }));
      expect((await fresh.getMachines([])).size).toBe(0);
    });

    it('getRecords reads machines, instances, meta-instances, the catalog and the site heartbeat in one call', async () => {
      const fresh = await newStore();
      await fresh.commit({
        machines: [create(aMachine({ id: 'gr-m1' })), create(aMachine({ id: 'gr-m2' }))],
        instances: [create(instance('gr-i1'))],
        metaInstances: [create(aMetaInstance({ id: 'gr-mi1' }))],
        history: [],
      });
      const none = await fresh.getRecords({ machines: ['gr-m1'], catalog: true, siteHeartbeat: true });
      expect(none.catalog).toEqual({ types: {}, version: expect.any(Number) });
      expect(none.catalog!.types).toEqual({});
      expect(none.siteHeartbeat).toBeNull();
      const heartbeat = await fresh.putSiteHeartbeat(null, { rosterSeenAt: iso(at(0)), machineCount: 2 });
      const found = await fresh.getRecords({
        machines: ['gr-m1', 'gr-m2', 'gr-unknown', 'gr-m1'],
        instances: ['gr-i1', 'gr-m1'],
        metaInstances: ['gr-mi1', 'gr-i1'],
        siteHeartbeat: true,
      });
      expect([...found.machines.keys()].sort()).toEqual(['gr-m1', 'gr-m2']);
      expect(found.machines.get('gr-m2')).toEqual({ ...aMachine({ id: 'gr-m2' }), version: 0 });
      expect([...found.instances.keys()]).toEqual(['gr-i1']);
      expect(found.instances.get('gr-i1')).toEqual({ ...instance('gr-i1'), version: 0 });
      expect([...found.metaInstances.keys()]).toEqual(['gr-mi1']);
      expect(found.metaInstances.get('gr-mi1')).toEqual({ ...aMetaInstance({ id: 'gr-mi1' }), version: 0 });
      expect(found.siteHeartbeat).toEqual(heartbeat);
      expect(found.catalog).toBeUndefined();
      const empty = await fresh.getRecords({});
      expect([empty.machines.size, empty.instances.size, empty.metaInstances.size]).toEqual([0, 0, 0]);
    });

    it('createMachines writes new machines in batches, indexed as a commit would', async () => {
      const fresh = await newStore();
      const ids = Array.from({ length: 60 }, (_, i) => `cm-${String(i).padStart(2, '0')}`);
      const machines = ids.map((id) => registerMachine(null, { id, machineType: 'gb300', rack: 'r1' }, 'ops', T0)!.machines![0]!.after);
      await fresh.createMachines(machines);
      await kit.catalogue(machines, fresh);
      expect(await fresh.getMachines(ids)).toEqual(new Map(machines.map((m) => [m.id, m])));
      expect(await fresh.allocatableMachineIds('gb300', 100)).toEqual(ids);
      expect((await fresh.listMachines({ limit: 100 })).items.map((m) => m.id)).toEqual(ids);
    });

    it('allocatable ids from a rack on, then from the start, each machine once', async () => {
      const fresh = await newStore();
      const machines = ['r1', 'r2', 'r3', 'r4'].flatMap((rack) =>
        [1, 2].map((n) => registerMachine(null, { id: `fr-${rack}-${n}`, machineType: 'gb300', rack }, 'ops', T0)!.machines![0]!.after),
      );
      await fresh.createMachines(machines);
      await kit.catalogue(machines, fresh);
      const from = (rack: string, enough = 100) => ({ rack, enough });
      expect(await fresh.allocatableMachineIds('gb300', 3, from('r3'))).toEqual(['fr-r3-1', 'fr-r3-2', 'fr-r4-1']);
      expect(await fresh.allocatableMachineIds('gb300', 6, from('r3'))).toEqual(['fr-r3-1', 'fr-r3-2', 'fr-r4-1', 'fr-r4-2', 'fr-r1-1', 'fr-r1-2']);
      expect(await fresh.allocatableMachineIds('gb300', 100, from('r3'))).toEqual([
        'fr-r3-1',
        'fr-r3-2',
        'fr-r4-1',
        'fr-r4-2',
        'fr-r1-1',
        'fr-r1-2',
        'fr-r2-1',
        'fr-r2-2',
      ]);
      expect(await fresh.allocatableMachineIds('gb300', 100, from('r1'))).toEqual(machines.map((m) => m.id));
      // Enough from the rack on: no wrapping round to the start.
      expect(await fresh.allocatableMachineIds('gb300', 100, from('r3', 4))).toEqual(['fr-r3-1', 'fr-r3-2', 'fr-r4-1', 'fr-r4-2']);
      expect(await fresh.allocatableMachineIds('gb300', 100, from('r4', 3))).toEqual([
        'fr-r4-1',
        'fr-r4-2',
        'fr-r1-1',
        'fr-r1-2',
        'fr-r2-1',
        'fr-r2-2',
        'fr-r3-1',
        'fr-r3-2',
      ]);
      // A rack the index does not hold starts where its keys would sort.
      expect(await fresh.allocatableMachineIds('gb300', 2, from('r25'))).toEqual(['fr-r3-1', 'fr-r3-2']);
    });

    it('buckets and digests are guarded records, written together, and an unsettled bucket is due', async () => {
      const fresh = await newStore();
      expect(await fresh.getRosterDigests()).toBeNull();
      const b7 = bucket('07', ['m-a', 'm-b']);
      await fresh.commit({
        rosterBuckets: [
          { before: null, after: b7 },
          { before: null, after: bucket('09', []) },
        ],
        rosterDigests: { before: null, after: { buckets: { '07': b7.digest }, version: 0 } },
        history: [],
      });
      const stored = await fresh.getRosterBuckets(['07', '08', '09']);
      expect([...stored.keys()].sort()).toEqual(['07', '09']);
      expect(stored.get('07')).toEqual(b7);
      expect(await fresh.getRosterDigests()).toEqual({ buckets: { '07': b7.digest }, version: 0 });
      // Due once the stream has had its grace to walk it.
      expect((await fresh.dueEntities(at(1_000 + ROSTER_WALK_GRACE_MS - 1), { limit: 10 })).items).not.toContainEqual({ entity: 'roster-bucket', id: '07' });
      expect((await fresh.dueEntities(at(1_000 + ROSTER_WALK_GRACE_MS), { limit: 10 })).items).toEqual(
        expect.arrayContaining([{ entity: 'roster-bucket', id: '07' }]),
      );

      // A writer that read before loses; the applied bucket leaves the due index.
      expect(await rejectionOf(fresh.commit({ rosterBuckets: [{ before: null, after: b7 }], history: [] }))).toBeInstanceOf(StaleWriteError);
      await fresh.commit({ rosterBuckets: [{ before: b7, after: { ...b7, appliedDigest: b7.digest } }], history: [] });
      expect((await fresh.getRosterBuckets(['07'])).get('07')).toMatchObject({ appliedDigest: b7.digest, version: 1 });
      expect((await fresh.dueEntities(at(1_000 + ROSTER_WALK_GRACE_MS), { limit: 10 })).items).not.toContainEqual({ entity: 'roster-bucket', id: '07' });
    });
  });
}
