import { beforeAll, describe, expect, it } from 'vitest';
import { auditEntry, type AuditEntry } from '#domain/audit.ts';
import { applyDelta, shardOf, summaryChange } from '#domain/fleet-summary.ts';
import type { Change } from '#domain/change.ts';
import { finishCleanup, claimCleanup, cleanupTimings } from '#domain/cleanup.ts';
import { inAllocatableIndex } from '#domain/health.ts';
import { bucketWithRoster, type RosterBucket } from '#domain/heartbeat.ts';
import { assignInstance, releaseInstance } from '#domain/instances.ts';
import { registerMachine } from '#domain/machines.ts';
import type { HealthOverride, HistoryEntry, Instance, InstanceStatus, Machine } from '#domain/model.ts';
import { Rejection } from '#domain/rejection.ts';
import { addMs, iso } from '#domain/time.ts';
import { StaleWriteError, type AuditFilter, type FleetStore } from '#store/port.ts';
import { aMachine, aMetaInstance, aRepairRequest, anInstance, summaryOfOne, T0 } from './fixtures.ts';

/**
 * What every FleetStore implementation must do, as observed through the interface alone. `newStore` gives an empty
 * store each time it is called; test/integration/store.test.ts runs this against each implementation.
 */
export function storeContract(newStore: () => Promise<FleetStore>): void {
  const at = (ms: number) => addMs(T0, ms);

  let store: FleetStore;

  beforeAll(async () => {
    store = await newStore();
  });

  const machine = (id: string, over: Partial<Machine> = {}): Machine => aMachine({ id, ...over });

  const instance = (id: string, over: Partial<Instance> = {}): Instance =>
    anInstance({ id, name: id, machineId: 'm-x', siteName: id, creation: { clientToken: `ct-${id}`, phase: 'pending' }, ...over });

  const create = <T>(after: T) => ({ before: null, after });

  async function register(id: string, machineType = 'gb200'): Promise<Machine> {
    await store.commit(registerMachine(null, { id, machineType, rack: 'r1' }, 'ops', T0)!);
    return (await store.getMachine(id))!;
  }

  async function allHistory(machineId: string): Promise<HistoryEntry[]> {
    return (await store.listHistory(machineId, { limit: 500 })).items;
  }

  async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
    try {
      await promise;
    } catch (error) {
      return error;
    }
    throw new Error('expected a rejection');
  }

  describe('commit', () => {
    it('writes records and their history entries in one transaction, versions starting at 0', async () => {
      const a = registerMachine(null, { id: 'c-a', machineType: 'gb200', rack: 'r1', labels: { x: '1' } }, 'ops', T0)!;
      const b = registerMachine(null, { id: 'c-b', machineType: 'h100', rack: 'r2' }, 'ops', T0)!;
      const noted = (machineId: string): HistoryEntry => ({ machineId, at: iso(T0), actor: 'ops', action: 'noted' });
      await store.commit({ machines: [...a.machines!, ...b.machines!], history: [noted('c-a'), noted('c-b')] });

      expect(await store.getMachine('c-a')).toEqual({ ...a.machines![0]!.after, version: 0 });
      expect(await store.getMachine('c-b')).toEqual({ ...b.machines![0]!.after, version: 0 });
      expect(await allHistory('c-a')).toEqual([noted('c-a')]);
      expect(await allHistory('c-b')).toEqual([noted('c-b')]);

      const read = (await store.getMachine('c-a'))!;
      const { change, instance: created } = assignInstance(read, { id: 'c-i', org: 'acme', name: 'job', labels: {}, clientToken: 'ct', createdBy: 'alice' }, at(1_000));
      await store.commit(change);

      expect(await store.getMachine('c-a')).toEqual({ ...change.machines![0]!.after, version: 1 });
      expect(await store.getInstance('c-i')).toEqual({ ...created, version: 0 });
      expect((await allHistory('c-a')).map((h) => h.action)).toEqual(['instance-created', 'noted']);
    });

    it('a stale before.version raises StaleWriteError and writes nothing of the change', async () => {
      const a = await register('s-a');
      const b = await register('s-b');
      const stale = a;
      // Someone else updates s-a after our read.
      await store.commit(registerMachine(a, { id: 's-a', machineType: 'gb200', labels: { touched: 'yes' } }, 'other', at(1_000))!);
      const current = (await store.getMachine('s-a'))!;
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

      expect(await rejectionOf(store.commit(combined))).toBeInstanceOf(StaleWriteError);

      expect(await store.getMachine('s-a')).toEqual(current);
      expect(await store.getMachine('s-b')).toEqual(b);
      expect(await store.getMachine('s-new')).toBeNull();
      expect(await store.getInstance('s-i')).toBeNull();
      expect(await allHistory('s-a')).toEqual(historyBefore.a);
      expect(await allHistory('s-b')).toEqual(historyBefore.b);
      expect(await allHistory('s-new')).toEqual([]);
    });

    it('creating a record that exists (before: null) is refused and changes nothing', async () => {
      const existing = await register('dup-m');
      const again = registerMachine(null, { id: 'dup-m', machineType: 'h100', rack: 'r7' }, 'ops', at(5_000))!;
      const noted: HistoryEntry = { machineId: 'dup-m', at: iso(at(5_000)), actor: 'ops', action: 'noted' };
      expect(await rejectionOf(store.commit({ ...again, history: [noted] }))).toBeInstanceOf(StaleWriteError);
      expect(await store.getMachine('dup-m')).toEqual(existing);
      expect(await allHistory('dup-m')).toEqual([]);

      await store.commit({ instances: [create(instance('dup-i'))], history: [] });
      const second = { instances: [create(instance('dup-i', { org: 'evil', status: 'Ready' }))], history: [] };
      expect(await rejectionOf(store.commit(second))).toBeInstanceOf(StaleWriteError);
      expect(await store.getInstance('dup-i')).toEqual(instance('dup-i'));
    });

    it('a record written with a stale version cannot be re-applied: the second of two writers from one read loses', async () => {
      const read = await register('race-m');
      const first = registerMachine(read, { id: 'race-m', machineType: 'gb200', labels: { who: 'first' } }, 'a', at(1_000))!;
      const second = registerMachine(read, { id: 'race-m', machineType: 'gb200', labels: { who: 'second' } }, 'b', at(1_000))!;
      const results = await Promise.allSettled([store.commit(first), store.commit(second)]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect(lost.reason).toBeInstanceOf(StaleWriteError);
      const stored = (await store.getMachine('race-m'))!;
      expect(stored.version).toBe(1);
      expect(['first', 'second']).toContain(stored.labels.who);
      expect((await allHistory('race-m')).map((h) => h.actor)).toEqual([stored.labels.who === 'first' ? 'a' : 'b']);
    });
  });

  describe('allocatable index', () => {
    const preventing = aRepairRequest('alloc-m');
    const healthy: HealthOverride = { source: 'mark-healthy', mode: 'replace', alerts: [], createdBy: 'ops', createdAt: iso(T0) };

    it('holds a machine exactly while inAllocatableIndex says so', async () => {
      const type = 'alloc-type';
      const ids = async () => await store.allocatableMachineIds(type);
      const expectIndexed = async (expected: boolean) => {
        const m = (await store.getMachine('alloc-m'))!;
        expect(inAllocatableIndex(m)).toBe(expected);
        expect(await ids()).toEqual(expected ? ['alloc-m'] : []);
      };
      const update = async (edit: (m: Machine) => Change) => {
        await store.commit(edit((await store.getMachine('alloc-m'))!));
      };

      await register('alloc-m', type);
      await register('alloc-other', 'other-type');
      await expectIndexed(true);
      // Its ids alone are one read; a page of it is the machines themselves, read from the table.
      expect(await store.allocatableMachineIds(type)).toEqual(['alloc-m']);
      expect((await store.allocatableMachinesPage(type, { limit: 10 })).items).toEqual([await store.getMachine('alloc-m')]);

      // Heartbeat freshness is not the index's business.
      await update((m) => ({ machines: [{ before: m, after: { ...m, heartbeatLive: false, lastHeartbeatAt: iso(at(-3_600_000)) } }], history: [] }));
      await expectIndexed(true);

      await update((m) => assignInstance(m, { id: 'alloc-i', org: 'acme', name: 'job', labels: {}, clientToken: 'ct', createdBy: 'alice' }, at(1_000)).change);
      await expectIndexed(false);

      const released = releaseInstance((await store.getInstance('alloc-i'))!, (await store.getMachine('alloc-m'))!, { actor: 'alice', isRepairTenant: false, policy: { kind: 'off' as const } }, at(2_000));
      expect(released.kind).toBe('release');
      if (released.kind === 'release') await store.commit(released.change);
      expect((await store.getMachine('alloc-m'))!.state).toBe('Cleanup');
      await expectIndexed(false);

      await update((m) => claimCleanup(m, null, at(3_000), cleanupTimings(60_000))!);
      await expectIndexed(false);

      await update((m) => finishCleanup(m, null, { ok: true }, 'site-agent', at(4_000)));
      expect((await store.getMachine('alloc-m'))!.state).toBe('Ready');
      await expectIndexed(true);

      await update((m) => ({ machines: [{ before: m, after: { ...m, healthOverrides: [preventing] } }], history: [] }));
      await expectIndexed(false);

      await update((m) => ({ machines: [{ before: m, after: { ...m, healthOverrides: [preventing, healthy] } }], history: [] }));
      await expectIndexed(true);

      // Type changes move it to the other type's partition.
      await update((m) => registerMachine(m, { id: 'alloc-m', machineType: 'moved-type' }, 'ops', at(5_000))!);
      expect(await ids()).toEqual([]);
      expect(await store.allocatableMachineIds('moved-type')).toEqual(['alloc-m']);
      expect(await store.allocatableMachineIds('other-type')).toEqual(['alloc-other']);
    });

    it('a failed cleanup keeps it out', async () => {
      const type = 'alloc-failed-type';
      const inCleanup = machine('alloc-f', {
        machineType: type,
        state: 'Cleanup',
        instanceId: 'i-f',
        cleanup: { instanceId: 'i-f', phase: 'requested', attempts: 1, leaseUntil: iso(at(60_000)) },
      });
      await store.commit({ machines: [create(inCleanup)], history: [] });
      const read = (await store.getMachine('alloc-f'))!;
      await store.commit(finishCleanup(read, null, { ok: false, message: 'GPU stuck' }, 'site-agent', at(1_000)));
      const failed = (await store.getMachine('alloc-f'))!;
      expect(failed.cleanup?.phase).toBe('failed');
      expect(inAllocatableIndex(failed)).toBe(false);
      expect(await store.allocatableMachineIds(type)).toEqual([]);
    });
  });

  describe('allocatable index by rack', () => {
    const type = 'rack-type';
    const ids = (machines: Machine[]) => machines.map((m) => m.id);

    beforeAll(async () => {
      // Ids and racks in opposite orders: the index orders by rack first. r1 is a prefix of r10 by name.
      const placed: Array<[string, string]> = [['rk-a', 'r2'], ['rk-b', 'r10'], ['rk-c', 'r1'], ['rk-d', 'r2'], ['rk-e', 'r1']];
      const changes = placed.map(([id, rack]) => registerMachine(null, { id, machineType: type, rack }, 'ops', T0)!);
      await store.commit({ machines: changes.flatMap((c) => c.machines!), history: [] });
      const taken = (await store.getMachine('rk-d'))!;
      await store.commit(assignInstance(taken, { id: 'rk-i', org: 'acme', name: 'job', labels: {}, clientToken: 'ct-rk', createdBy: 'alice' }, T0).change);
    });

    it('pages through the free machines of a type rack by rack, each page continuing where the last stopped', async () => {
      const first = await store.allocatableMachinesPage(type, { limit: 2 });
      expect(ids(first.items)).toEqual(['rk-c', 'rk-e']);
      expect(first.nextToken).toEqual(expect.any(String));
      const second = await store.allocatableMachinesPage(type, { limit: 2, nextToken: first.nextToken });
      expect(ids(second.items)).toEqual(['rk-b', 'rk-a']);
      const last = await store.allocatableMachinesPage(type, { limit: 2, nextToken: second.nextToken });
      expect(last.items).toEqual([]);
      expect(last.nextToken).toBeUndefined();
    });

    it('reads one rack alone: only its free machines, not those of a rack whose name extends it', async () => {
      expect(ids((await store.allocatableMachinesPage(type, { limit: 10, rack: 'r1' })).items)).toEqual(['rk-c', 'rk-e']);
      expect(ids((await store.allocatableMachinesPage(type, { limit: 10, rack: 'r2' })).items)).toEqual(['rk-a']);
      expect((await store.allocatableMachinesPage(type, { limit: 10, rack: 'r3' })).items).toEqual([]);
      expect((await store.allocatableMachinesPage('other-rack-type', { limit: 10, rack: 'r1' })).items).toEqual([]);
    });
  });

  describe('due index', () => {
    it('returns what is due now and not what is leased into the future', async () => {
      const now = at(3_600_000);
      const records: Change = {
        instances: [
          create(instance('due-i-pending', { updatedAt: iso(at(1_000)) })),
          create(instance('due-i-expired', { creation: { clientToken: 'ct', phase: 'in-flight', leaseUntil: iso(addMs(now, -1_000)) } })),
          create(instance('due-i-leased', { creation: { clientToken: 'ct', phase: 'in-flight', leaseUntil: iso(addMs(now, 60_000)) } })),
          create(instance('due-i-done', { creation: { clientToken: 'ct', phase: 'done' } })),
          create(instance('due-i-ready', { status: 'Ready', creation: { clientToken: 'ct', phase: 'done' } })),
          create(instance('due-i-terminating', { status: 'Terminating' })),
        ],
        machines: [
          create(machine('due-m-pending', { state: 'Cleanup', instanceId: 'x1', cleanup: { instanceId: 'x1', phase: 'pending', attempts: 0 } })),
          create(
            machine('due-m-expired', {
              state: 'Cleanup',
              instanceId: 'x2',
              cleanup: { instanceId: 'x2', phase: 'requested', attempts: 1, leaseUntil: iso(addMs(now, -1)) },
            }),
          ),
          create(
            machine('due-m-leased', {
              state: 'Cleanup',
              instanceId: 'x3',
              cleanup: { instanceId: 'x3', phase: 'requested', attempts: 1, leaseUntil: iso(addMs(now, 60_000)) },
            }),
          ),
          create(machine('due-m-failed', { state: 'Cleanup', instanceId: 'x4', cleanup: { instanceId: 'x4', phase: 'failed', attempts: 1, error: 'x' } })),
          create(machine('due-m-ready')),
          create(machine('due-m-assigned', { state: 'Assigned', instanceId: 'x5' })),
        ],
        history: [],
      };
      await store.commit(records);

      const due = async (when: Date) =>
        (await store.dueEntities(when, { limit: 500 })).items
          .filter((ref) => ref.id.startsWith('due-'))
          .map((ref) => `${ref.entity}:${ref.id}`)
          .sort();

      expect(await due(now)).toEqual(['instance:due-i-expired', 'instance:due-i-pending', 'machine:due-m-expired', 'machine:due-m-pending']);
      // Page by page, earliest first, each page going on where the last stopped: the same entries, none twice.
      const paged: string[] = [];
      let nextToken: string | undefined;
      do {
        const page = await store.dueEntities(now, { limit: 1, nextToken });
        expect(page.items.length).toBeLessThanOrEqual(1);
        paged.push(...page.items.map((ref) => `${ref.entity}:${ref.id}`));
        nextToken = page.nextToken;
      } while (nextToken && paged.length < 100);
      expect(paged.filter((ref) => ref.includes(':due-')).sort()).toEqual(await due(now));
      expect(paged).toEqual((await store.dueEntities(now, { limit: 500 })).items.map((ref) => `${ref.entity}:${ref.id}`));
      // Once the leases lapse, their records are due too.
      expect(await due(addMs(now, 60_000))).toEqual([
        'instance:due-i-expired',
        'instance:due-i-leased',
        'instance:due-i-pending',
        'machine:due-m-expired',
        'machine:due-m-leased',
        'machine:due-m-pending',
      ]);
      // Before anything was written, nothing of it is due.
      expect(await due(at(0))).toEqual(['machine:due-m-pending']);

      // Finishing the work takes a record out of the index.
      const pending = (await store.getInstance('due-i-pending'))!;
      await store.commit({ instances: [{ before: pending, after: { ...pending, status: 'Ready', creation: { ...pending.creation, phase: 'done' } } }], history: [] });
      expect(await due(now)).not.toContain('instance:due-i-pending');
    });
  });

  describe('listInstances', () => {
    const org = 'list-org';
    const statuses: InstanceStatus[] = ['Ready', 'Provisioning', 'Ready', 'Terminated', 'Ready'];
    // Created a minute apart; li-4 is the newest.
    const ids = statuses.map((_, i) => `li-${i}`);
    const newestFirst = [...ids].reverse();

    beforeAll(async () => {
      await store.commit({
        instances: [
          ...statuses.map((status, i) => create(instance(`li-${i}`, { org, status, createdAt: iso(at(i * 60_000)), updatedAt: iso(at(i * 60_000)) }))),
          create(instance('li-other-org', { org: 'someone-else', status: 'Ready', createdAt: iso(at(10 * 60_000)) })),
        ],
        history: [],
      });
    });

    async function allPages(page: { limit: number; status?: string }) {
      const pages: string[][] = [];
      let nextToken: string | undefined;
      do {
        const result = await store.listInstances(org, { ...page, nextToken });
        expect(result.items.length).toBeLessThanOrEqual(page.limit);
        pages.push(result.items.map((i) => i.id));
        nextToken = result.nextToken;
      } while (nextToken && pages.length < 20);
      return pages;
    }

    it('lists one org, newest first, in one page when it fits', async () => {
      const result = await store.listInstances(org, { limit: 50 });
      expect(result.items.map((i) => i.id)).toEqual(newestFirst);
      expect(result.nextToken).toBeUndefined();
      expect(result.items[0]).toEqual(instance('li-4', { org, status: 'Ready', createdAt: iso(at(4 * 60_000)), updatedAt: iso(at(4 * 60_000)) }));
    });

    it('pages by limit; nextToken continues where the page ended', async () => {
      const pages = await allPages({ limit: 2 });
      expect(pages.flat()).toEqual(newestFirst);
      expect(pages.slice(0, 3)).toEqual([newestFirst.slice(0, 2), newestFirst.slice(2, 4), newestFirst.slice(4)]);

      const first = await store.listInstances(org, { limit: 2 });
      expect(first.nextToken).toEqual(expect.any(String));
      const second = await store.listInstances(org, { limit: 2, nextToken: first.nextToken });
      expect(second.items.map((i) => i.id)).toEqual(newestFirst.slice(2, 4));
    });

    it('filters by status, across pages too', async () => {
      const readyNewestFirst = newestFirst.filter((id) => statuses[Number(id.slice(3))] === 'Ready');
      expect(readyNewestFirst).toEqual(['li-4', 'li-2', 'li-0']);
      expect((await store.listInstances(org, { limit: 50, status: 'Ready' })).items.map((i) => i.id)).toEqual(readyNewestFirst);
      expect((await allPages({ limit: 2, status: 'Ready' })).flat()).toEqual(readyNewestFirst);
      expect((await store.listInstances(org, { limit: 50, status: 'Failed' })).items).toEqual([]);
      expect((await store.listInstances(org, { limit: 50, status: 'Terminated' })).items.map((i) => i.id)).toEqual(['li-3']);
    });

    it('an unknown org has nothing', async () => {
      expect(await store.listInstances('nobody', { limit: 50 })).toEqual({ items: [], nextToken: undefined });
    });
  });

  describe('listHistory', () => {
    it('newest first, paged', async () => {
      const entry = (ms: number, action: string): HistoryEntry => ({ machineId: 'hist-m', at: iso(at(ms)), actor: 'ops', action });
      await store.commit({ history: [entry(3_000, 'third'), entry(1_000, 'first')] });
      await store.commit({ history: [entry(2_000, 'second'), entry(4_000, 'fourth')] });
      await store.commit({ history: [{ machineId: 'hist-other', at: iso(at(9_000)), actor: 'ops', action: 'elsewhere' }] });

      const all = await store.listHistory('hist-m', { limit: 50 });
      expect(all.items.map((h) => h.action)).toEqual(['fourth', 'third', 'second', 'first']);
      expect(all.items[0]).toEqual(entry(4_000, 'fourth'));

      const first = await store.listHistory('hist-m', { limit: 3 });
      expect(first.items.map((h) => h.action)).toEqual(['fourth', 'third', 'second']);
      const rest = await store.listHistory('hist-m', { limit: 3, nextToken: first.nextToken });
      expect(rest.items.map((h) => h.action)).toEqual(['first']);
      expect(rest.nextToken).toBeUndefined();

      // As DynamoDB: a page that stops at its limit has a next token even when nothing follows (the machine
      // history route relies on it to add the registration entry on a page with room).
      const whole = await store.listHistory('hist-m', { limit: 4 });
      expect(whole.nextToken).toBeDefined();
      expect(await store.listHistory('hist-m', { limit: 4, nextToken: whole.nextToken })).toEqual({ items: [], nextToken: undefined });
    });

    it('does not mix in the machine record itself, nor store its registration', async () => {
      await register('hist-reg');
      expect(await allHistory('hist-reg')).toEqual([]);
    });
  });

  describe('eventsOnDay', () => {
    it('holds the history entries carrying an event, under their UTC day, oldest first', async () => {
      const entry = (machineId: string, at: string, type?: string): HistoryEntry => ({
        machineId,
        at,
        actor: 'ops',
        action: type ? 'event-emitted' : 'note',
        ...(type ? { message: type, event: { type, detail: { machineId } } } : {}),
      });
      const late = entry('ev-b', '2031-05-06T23:59:59.999Z', 'RepairCompleted');
      const early = entry('ev-a', '2031-05-06T00:00:00.000Z', 'MachineQuarantined');
      await store.commit({
        history: [late, early, entry('ev-a', '2031-05-06T12:00:00.000Z'), entry('ev-a', '2031-05-05T23:59:59.999Z', 'RepairFailed'), entry('ev-c', '2031-05-07T00:00:00.000Z', 'RepairFailed')],
      });
      expect(await store.eventsOnDay('2031-05-06')).toEqual([early, late]);
      expect((await store.eventsOnDay('2031-05-05')).map((e) => e.event?.type)).toEqual(['RepairFailed']);
      expect(await store.eventsOnDay('2031-05-08')).toEqual([]);
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

    it('keeps a split roster\'s parts, and drops them when the roster is whole again', async () => {
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
      const from = (rack: string, enough = 100) => ({ rack, enough });
      expect(await fresh.allocatableMachineIds('gb300', 3, from('r3'))).toEqual(['fr-r3-1', 'fr-r3-2', 'fr-r4-1']);
      expect(await fresh.allocatableMachineIds('gb300', 6, from('r3'))).toEqual(['fr-r3-1', 'fr-r3-2', 'fr-r4-1', 'fr-r4-2', 'fr-r1-1', 'fr-r1-2']);
      expect(await fresh.allocatableMachineIds('gb300', 100, from('r3'))).toEqual(['fr-r3-1', 'fr-r3-2', 'fr-r4-1', 'fr-r4-2', 'fr-r1-1', 'fr-r1-2', 'fr-r2-1', 'fr-r2-2']);
      expect(await fresh.allocatableMachineIds('gb300', 100, from('r1'))).toEqual(machines.map((m) => m.id));
      // Enough from the rack on: no wrapping round to the start.
      expect(await fresh.allocatableMachineIds('gb300', 100, from('r3', 4))).toEqual(['fr-r3-1', 'fr-r3-2', 'fr-r4-1', 'fr-r4-2']);
      expect(await fresh.allocatableMachineIds('gb300', 100, from('r4', 3))).toEqual(['fr-r4-1', 'fr-r4-2', 'fr-r1-1', 'fr-r1-2', 'fr-r2-1', 'fr-r2-2', 'fr-r3-1', 'fr-r3-2']);
      // A rack the index does not hold starts where its keys would sort.
      expect(await fresh.allocatableMachineIds('gb300', 2, from('r25'))).toEqual(['fr-r3-1', 'fr-r3-2']);
    });

    it('buckets and digests are guarded records, written together, and an unsettled bucket is due', async () => {
      const fresh = await newStore();
      expect(await fresh.getRosterDigests()).toBeNull();
      const b7 = bucket('07', ['m-a', 'm-b']);
      await fresh.commit({ rosterBuckets: [{ before: null, after: b7 }, { before: null, after: bucket('09', []) }], rosterDigests: { before: null, after: { buckets: { '07': b7.digest }, version: 0 } }, history: [] });
      const stored = await fresh.getRosterBuckets(['07', '08', '09']);
      expect([...stored.keys()].sort()).toEqual(['07', '09']);
      expect(stored.get('07')).toEqual(b7);
      expect(await fresh.getRosterDigests()).toEqual({ buckets: { '07': b7.digest }, version: 0 });
      expect((await fresh.dueEntities(at(1_000), { limit: 10 })).items).toEqual(expect.arrayContaining([{ entity: 'roster-bucket', id: '07' }]));

      // A writer that read before loses; the applied bucket leaves the due index.
      expect(await rejectionOf(fresh.commit({ rosterBuckets: [{ before: null, after: b7 }], history: [] }))).toBeInstanceOf(StaleWriteError);
      await fresh.commit({ rosterBuckets: [{ before: b7, after: { ...b7, appliedDigest: b7.digest } }], history: [] });
      expect((await fresh.getRosterBuckets(['07'])).get('07')).toMatchObject({ appliedDigest: b7.digest, version: 1 });
      expect((await fresh.dueEntities(at(1_000), { limit: 10 })).items).not.toContainEqual({ entity: 'roster-bucket', id: '07' });
    });
  });

  describe('page tokens', () => {
    const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
    const tokenParts = (token: string) => JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { listing: string; key: Record<string, unknown> };
    const reissued = (token: string, key: (k: Record<string, unknown>) => unknown) => {
      const parts = tokenParts(token);
      return b64({ ...parts, key: key(parts.key) });
    };
    let tokens: { orgA: string; orgB: string; history: string; machines: string };

    beforeAll(async () => {
      const created = (org: string, n: number) => create(instance(`pt-${org}-${n}`, { org, status: 'Ready', createdAt: iso(at(n * 1_000)) }));
      await store.commit({ instances: [0, 1, 2].flatMap((n) => [created('pt-a', n), created('pt-b', n)]), history: [] });
      const entry = (machineId: string, ms: number): HistoryEntry => ({ machineId, at: iso(at(ms)), actor: 'ops', action: `a${ms}` });
      await store.commit({ history: [entry('pt-m1', 1), entry('pt-m1', 2), entry('pt-m2', 1), entry('pt-m2', 2)] });
      await register('pt-machine-1');
      await register('pt-machine-2');
      const first = async (page: Promise<{ nextToken?: string | undefined }>) => (await page).nextToken!;
      tokens = {
        orgA: await first(store.listInstances('pt-a', { limit: 1 })),
        orgB: await first(store.listInstances('pt-b', { limit: 1 })),
        history: await first(store.listHistory('pt-m1', { limit: 1 })),
        machines: await first(store.listMachines({ limit: 1 })),
      };
    });

    async function refusal(promise: Promise<unknown>) {
      const thrown = await rejectionOf(promise);
      expect(thrown).toBeInstanceOf(Rejection);
      expect(thrown).toMatchObject({ status: 422, code: 'invalid-page-token', errors: [{ path: 'query.nextToken', message: expect.any(String) }] });
    }

    it('continue the listing that issued them', async () => {
      const second = await store.listInstances('pt-a', { limit: 1, nextToken: tokens.orgA });
      expect(second.items.map((i) => i.id)).toEqual(['pt-pt-a-1']);
      const history = await store.listHistory('pt-m1', { limit: 5, nextToken: tokens.history });
      expect(history.items.map((h) => h.action)).toEqual(['a1']);
    });

    it.each([
      { name: 'not base64 JSON', token: 'not-a-token!' },
      { name: 'punctuation', token: '!!!***' },
      { name: 'a number', token: b64('42') },
      { name: 'an array', token: b64('[1,2]') },
      { name: 'null', token: b64('null') },
      { name: 'a string', token: b64('"pk"') },
      { name: 'truncated JSON', token: b64('{"pk":"MACHINE#') },
      { name: 'a bare key, as tokens used to be', token: b64({ pk: 'INSTANCE#pt-pt-a-1', sk: '#INSTANCE' }) },
      { name: 'an out-of-range number', token: b64('{"pk":12345678901234567890}') },
      { name: 'a number beyond double range', token: b64('{"pk":1e400}') },
    ])('garbage is a 422 invalid-page-token: $name', async ({ token }) => {
      await refusal(store.listInstances('pt-a', { limit: 1, nextToken: token }));
      await refusal(store.listHistory('pt-m1', { limit: 1, nextToken: token }));
      await refusal(store.listMachines({ limit: 1, nextToken: token }));
    });

    it('a truncated token is refused', async () => {
      await refusal(store.listInstances('pt-a', { limit: 1, nextToken: tokens.orgA.slice(0, -4) }));
    });

    it("another org's token is refused, never answered with that org's items", async () => {
      await refusal(store.listInstances('pt-a', { limit: 1, nextToken: tokens.orgB }));
      await refusal(store.listMetaInstances('pt-a', { limit: 1, nextToken: tokens.orgB }));
    });

    it("another listing's token is refused: another route, another machine's history, another filter", async () => {
      await refusal(store.listInstances('pt-a', { limit: 1, nextToken: tokens.machines }));
      await refusal(store.listMachines({ limit: 1, nextToken: tokens.orgA }));
      await refusal(store.machinesAwaitingRepair({ limit: 1, nextToken: tokens.machines }));
      await refusal(store.listMetaInstances(null, { limit: 1, nextToken: tokens.machines }));
      await refusal(store.listHistory('pt-m2', { limit: 1, nextToken: tokens.history }));
      await refusal(store.listInstances('pt-a', { limit: 1, status: 'Ready', nextToken: tokens.orgA }));
    });

    it.each([
      { name: 'a key value that is a huge number', key: (k: Record<string, unknown>) => ({ ...k, sk: 12345678901234567890 }) },
      { name: 'a key value that is an object', key: (k: Record<string, unknown>) => ({ ...k, sk: { S: '#INSTANCE' } }) },
      { name: 'a key value that is empty', key: (k: Record<string, unknown>) => ({ ...k, sk: '' }) },
      { name: 'a key value over 1024 bytes', key: (k: Record<string, unknown>) => ({ ...k, orgSk: 'x'.repeat(1025) }) },
      { name: 'an extra attribute', key: (k: Record<string, unknown>) => ({ ...k, kind: 'MACHINE' }) },
      { name: 'a missing attribute', key: ({ orgSk: _dropped, ...k }: Record<string, unknown>) => k },
      { name: "another org's partition", key: (k: Record<string, unknown>) => ({ ...k, orgPk: 'ORG#pt-b#INSTANCE' }) },
      { name: 'a key that is a list', key: (k: Record<string, unknown>) => Object.values(k) },
    ])('a tampered key in a genuine token is refused: $name', async ({ key }) => {
      await refusal(store.listInstances('pt-a', { limit: 1, nextToken: reissued(tokens.orgA, key) }));
    });
  });

  describe('meta-instance indexes', () => {
    let fresh: FleetStore;
    const minute = (n: number) => iso(at(n * 60_000));
    beforeAll(async () => {
      fresh = await newStore();
      await fresh.commit({
        metaInstances: [
          create(aMetaInstance({ id: 'mi-old', createdAt: minute(0), waitingSince: minute(5) })),
          create(aMetaInstance({ id: 'mi-new', createdAt: minute(1), waitingSince: minute(2) })),
          create(aMetaInstance({ id: 'mi-ready', status: 'Ready', createdAt: minute(2) })),
          create(aMetaInstance({ id: 'mi-gone', status: 'Deleted', createdAt: minute(3) })),
          create(aMetaInstance({ id: 'mi-other', org: 'globex', machineType: 'h100', status: 'Retrying', createdAt: minute(4), nextAttemptAt: minute(9) })),
        ],
        instances: [
          create(instance('mem-a', { metaInstanceId: 'mi-ready', status: 'Ready' })),
          create(instance('mem-b', { metaInstanceId: 'mi-ready', replacement: true })),
          create(instance('mem-c', { metaInstanceId: 'mi-new', replacement: true, status: 'Ready' })),
          create(instance('mem-gone', { metaInstanceId: 'mi-ready', status: 'Terminated' })),
          create(instance('loner')),
        ],
        history: [],
      });
    });

    it('membersOf holds the instances bound to the meta-instance until they are Terminated', async () => {
      expect((await fresh.membersOf('mi-ready')).map((i) => i.id).sort()).toEqual(['mem-a', 'mem-b']);
      expect(await fresh.membersOf('mi-nobody')).toEqual([]);
      const memA = (await fresh.getInstance('mem-a'))!;
      await fresh.commit({ instances: [{ before: memA, after: { ...memA, status: 'Terminated' } }], history: [] });
      expect((await fresh.membersOf('mi-ready')).map((i) => i.id)).toEqual(['mem-b']);
      await fresh.commit({ instances: [{ before: { ...memA, status: 'Terminated', version: memA.version + 1 }, after: memA }], history: [] });
      expect((await fresh.membersOf('mi-ready')).map((i) => i.id).sort()).toEqual(['mem-a', 'mem-b']);
    });

    it('waiting holds Placing and Retrying meta-instances by type, longest waiting first, up to the limit', async () => {
      expect((await fresh.waitingMetaInstances('gb200', 10)).map((m) => m.id)).toEqual(['mi-new', 'mi-old']);
      expect((await fresh.waitingMetaInstances('gb200', 1)).map((m) => m.id)).toEqual(['mi-new']);
      expect((await fresh.waitingMetaInstances('h100', 10)).map((m) => m.id)).toEqual(['mi-other']);
    });

    it('replacementsInFlight counts replacements still provisioning', async () => {
      expect(await fresh.replacementsInFlight()).toBe(1);
    });

    it('lists one org or the whole site, newest first, without deleted ones, paged', async () => {
      expect((await fresh.listMetaInstances('acme', { limit: 10 })).items.map((m) => m.id)).toEqual(['mi-ready', 'mi-new', 'mi-old']);
      expect((await fresh.listMetaInstances(null, { limit: 10 })).items.map((m) => m.id)).toEqual(['mi-other', 'mi-ready', 'mi-new', 'mi-old']);
      const first = await fresh.listMetaInstances(null, { limit: 3 });
      expect(first.items.map((m) => m.id)).toEqual(['mi-other', 'mi-ready', 'mi-new']);
      const rest = await fresh.listMetaInstances(null, { limit: 3, nextToken: first.nextToken });
      expect(rest).toEqual({ items: [await fresh.getMetaInstance('mi-old')], nextToken: undefined });
    });

    it('due holds meta-instances to place at their next attempt', async () => {
      const due = async (when: Date) => (await fresh.dueEntities(when, { limit: 50 })).items.filter((ref) => ref.entity === 'meta-instance').map((ref) => ref.id).sort();
      expect(await due(at(8 * 60_000))).toEqual(['mi-new', 'mi-old']);
      expect(await due(at(9 * 60_000))).toEqual(['mi-new', 'mi-old', 'mi-other']);
    });
  });

  describe('machine listings', () => {
    let fresh: FleetStore;
    const requested = (id: string, createdAt: string, over: Partial<Machine> = {}) =>
      machine(id, { healthOverrides: [{ ...aRepairRequest(id), createdAt }], ...over });
    beforeAll(async () => {
      fresh = await newStore();
      await fresh.commit({
        machines: [
          create(machine('lm-a')),
          create(requested('lm-late', iso(at(50 * 60_000)))),
          create(requested('lm-early', iso(at(10 * 60_000)))),
          create(requested('lm-claimed', iso(at(0)), { state: 'Assigned', instanceId: 'repair-i', assignedAt: iso(at(20 * 60_000)) })),
        ],
        tenants: [create({ org: 'acme', capabilities: { targetedInstanceCreation: true }, updatedAt: iso(T0), version: 0 })],
        history: [],
      });
    });

    it('listMachines holds every machine and nothing else, by id, paged', async () => {
      const first = await fresh.listMachines({ limit: 3 });
      expect(first.items.map((m) => m.id)).toEqual(['lm-a', 'lm-claimed', 'lm-early']);
      const rest = await fresh.listMachines({ limit: 3, nextToken: first.nextToken });
      expect(rest.items.map((m) => m.id)).toEqual(['lm-late']);
      expect(rest.nextToken).toBeUndefined();
    });

    it('machinesAwaitingRepair: claimed repairs first, then unclaimed ones, each stage oldest first', async () => {
      expect((await fresh.machinesAwaitingRepair({ limit: 10 })).items.map((m) => m.id)).toEqual(['lm-claimed', 'lm-early', 'lm-late']);
    });

    it('repairsToWatch: every claimed repair, then the unclaimed requests older than the cut-off, oldest first', async () => {
      expect((await fresh.repairsToWatch(at(30 * 60_000))).map((m) => m.id)).toEqual(['lm-claimed', 'lm-early']);
      expect((await fresh.repairsToWatch(at(0))).map((m) => m.id)).toEqual(['lm-claimed']);
    });

    it('a page that ends exactly at the limit still carries a token, and the page after it is empty', async () => {
      const first = await fresh.listMachines({ limit: 4 });
      expect(first.items).toHaveLength(4);
      expect(first.nextToken).toEqual(expect.any(String));
      expect(await fresh.listMachines({ limit: 4, nextToken: first.nextToken })).toEqual({ items: [], nextToken: undefined });
    });

    it("another listing's token is refused with the 422 Rejection", async () => {
      const machines = await fresh.listMachines({ limit: 1 });
      const thrown = await rejectionOf(fresh.listInstances('acme', { limit: 1, nextToken: machines.nextToken }));
      expect(thrown).toBeInstanceOf(Rejection);
      expect(thrown).toMatchObject({ status: 422, code: 'invalid-page-token' });
    });
  });

  describe('audit log', () => {
    let fresh: FleetStore;
    const entry = (ms: number, actor: string, target: string, requestId = `req-${ms}`): AuditEntry =>
      auditEntry({ actor, requestId }, at(ms), 'labels-changed', target, { before: { a: '1' }, after: { a: String(ms) } });
    // Written oldest first; two at the same instant, which must not overwrite each other.
    const written = [
      entry(0, 'ops', 'machines/au-1'),
      entry(1_000, 'alice', 'machines/au-1'),
      entry(2_000, 'ops', 'tenants/acme'),
      entry(3_000, 'ops', 'machines/au-2', 'req-same-a'),
      entry(3_000, 'alice', 'machines/au-1', 'req-same-b'),
    ];
    const newestFirst = (keep: (e: AuditEntry) => boolean = () => true) => written.filter(keep).reverse();
    /** Newest first; entries of the same instant may come in either order (their keys end in a unique suffix). */
    const expectListed = (listed: AuditEntry[], expected: AuditEntry[]) => {
      expect(listed.map((e) => e.at)).toEqual(expected.map((e) => e.at));
      const byRequest = (entries: AuditEntry[]) => [...entries].sort((a, b) => a.requestId.localeCompare(b.requestId));
      expect(byRequest(listed)).toEqual(byRequest(expected));
    };
    /** Every page of a listing, `limit` at a time. */
    const allPages = async (filter: AuditFilter, limit: number) => {
      const items: AuditEntry[] = [];
      let nextToken: string | undefined;
      do {
        const page = await fresh.listAudit(filter, { limit, nextToken });
        expect(page.items.length).toBeLessThanOrEqual(limit);
        items.push(...page.items);
        nextToken = page.nextToken;
      } while (nextToken);
      return items;
    };

    beforeAll(async () => {
      fresh = await newStore();
      await fresh.commit({ machines: [create(machine('au-1'))], history: [] });
      for (const audit of written) await fresh.commit({ history: [], audit });
    });

    it('an entry is written with the change it audits, as it was given', async () => {
      const read = (await fresh.getMachine('au-1'))!;
      const audit = entry(4_000, 'ops', 'machines/au-1', 'req-with-change');
      await fresh.commit({ machines: [{ before: read, after: { ...read, labels: { a: '4000' } } }], history: [], audit });
      expect((await fresh.getMachine('au-1'))!.labels).toEqual({ a: '4000' });
      expect((await fresh.listAudit({ target: 'machines/au-1' }, { limit: 1 })).items).toEqual([audit]);
      written.push(audit);
    });

    it('a change that loses its race writes no audit entry either', async () => {
      const stale = (await fresh.getMachine('au-1'))!;
      await fresh.commit({ machines: [{ before: stale, after: { ...stale, rack: 'r9' } }], history: [] });
      const audit = entry(5_000, 'ops', 'machines/au-1', 'req-lost');
      expect(await rejectionOf(fresh.commit({ machines: [{ before: stale, after: { ...stale, rack: 'r8' } }], history: [], audit }))).toBeInstanceOf(StaleWriteError);
      expect((await allPages({}, 500)).map((e) => e.requestId)).not.toContain('req-lost');
    });

    it('lists every entry newest first, paged', async () => {
      expectListed(await allPages({}, 2), newestFirst());
    });

    it('filters by actor, by target, by both and by time, each paged', async () => {
      const since = iso(at(2_000));
      expectListed(await allPages({ actor: 'alice' }, 1), newestFirst((e) => e.actor === 'alice'));
      expectListed(await allPages({ target: 'machines/au-1' }, 2), newestFirst((e) => e.target === 'machines/au-1'));
      expectListed(await allPages({ target: 'machines/au-1', actor: 'ops' }, 1), newestFirst((e) => e.target === 'machines/au-1' && e.actor === 'ops'));
      expectListed(await allPages({ since }, 2), newestFirst((e) => e.at >= since));
      expectListed(await allPages({ actor: 'ops', since }, 2), newestFirst((e) => e.actor === 'ops' && e.at >= since));
      expectListed(await allPages({ target: 'machines/au-1', since }, 2), newestFirst((e) => e.target === 'machines/au-1' && e.at >= since));
      expect(await allPages({ target: 'machines/nobody' }, 10)).toEqual([]);
    });

    it("another filter's token is refused with the 422 Rejection", async () => {
      const everyEntry = await fresh.listAudit({}, { limit: 1 });
      const thrown = await rejectionOf(fresh.listAudit({ actor: 'ops' }, { limit: 1, nextToken: everyEntry.nextToken }));
      expect(thrown).toBeInstanceOf(Rejection);
      expect(thrown).toMatchObject({ status: 422, code: 'invalid-page-token' });
    });
  });

  describe('fleet summary aggregates', () => {
    it('a rack and its shard are written together, guarded by version; racks page by rack, one shard at a time', async () => {
      const racks = ['sum-r1', 'sum-r2', 'sum-r3'].map((rack) => {
        const m = machine(`${rack}-m`, { machineType: 'sumtype', rack, version: 3 });
        return summaryChange(summaryOfOne(m, null, null))!;
      });
      for (const change of racks) {
        const pair = change.fleetSummary!.shards[0]!;
        const stored = await store.getSummaryShard('sumtype', pair.after.shard);
        await store.commit({ ...change, fleetSummary: { racks: change.fleetSummary!.racks, shards: [{ before: stored, after: { ...pair.after, counters: applyDelta(stored?.counters ?? {}, pair.after.counters) } }] } });
      }
      const rack = (await store.getSummaryItems([{ machineType: 'sumtype', rack: 'sum-r1' }], [])).racks[0]!;
      expect(rack).toMatchObject({ machineType: 'sumtype', rack: 'sum-r1', version: 0, machines: { 'sum-r1-m': { version: 3, state: 'Ready', live: true } } });
      const shards = (await store.summaryShards()).filter((s) => s.machineType === 'sumtype');
      expect(shards.reduce((n, s) => n + (s.counters.machines ?? 0), 0)).toBe(3);

      // Machines are read in the same batch when asked for; unknown ones are left out.
      await store.commit({ machines: [create(machine('sum-read-m', { machineType: 'sumtype', rack: 'sum-r1' }))], history: [] });
      const together = await store.getSummaryItems([{ machineType: 'sumtype', rack: 'sum-r1' }], [{ machineType: 'sumtype', shard: shardOf('sum-r1') }], ['sum-read-m', 'sum-nobody']);
      expect(together.racks.map((r) => r.rack)).toEqual(['sum-r1']);
      expect(together.shards.map((s) => s.shard)).toEqual([shardOf('sum-r1')]);
      expect([...together.machines.keys()]).toEqual(['sum-read-m']);
      expect(together.machines.get('sum-read-m')).toMatchObject({ id: 'sum-read-m', machineType: 'sumtype', version: 0 });
      expect((await store.getSummaryItems([], [])).machines.size).toBe(0);

      // A second writer from the same read loses, and the shard is not touched by the lost transaction.
      const stale = summaryChange(summaryOfOne(machine('sum-r1-m', { machineType: 'sumtype', rack: 'sum-r1', version: 4 }), { ...rack, version: -5 }, null))!;
      const shardBefore = await store.getSummaryShard('sumtype', stale.fleetSummary!.shards[0]!.after.shard);
      expect(await rejectionOf(store.commit({ ...stale, fleetSummary: { ...stale.fleetSummary!, racks: [{ before: { ...rack, version: 7 }, after: stale.fleetSummary!.racks[0]!.after }], shards: [{ before: shardBefore, after: { ...shardBefore!, counters: {} } }] } }))).toBeInstanceOf(StaleWriteError);
      expect(await store.getSummaryShard('sumtype', shardBefore!.shard)).toEqual(shardBefore);

      const first = await store.listRackAggregates('sumtype', { limit: 2 });
      const second = await store.listRackAggregates('sumtype', { limit: 2, nextToken: first.nextToken });
      expect([...first.items, ...second.items].map((r) => r.rack).sort()).toEqual(['sum-r1', 'sum-r2', 'sum-r3']);
      const shard = shardOf('sum-r2');
      expect((await store.listRackAggregates('sumtype', { limit: 10, shard })).items.every((r) => shardOf(r.rack) === shard)).toBe(true);
      expect((await store.listRackAggregates('sumtype', { limit: 10, shard })).items.map((r) => r.rack)).toContain('sum-r2');
    });
  });

  describe('transactions', () => {
    it('more writes than one transaction holds are refused before anything is written', async () => {
      const entries: HistoryEntry[] = Array.from({ length: 100 }, (_, i) => ({ machineId: 'tx-big', at: iso(at(i)), actor: 'ops', action: `a${i}` }));
      const error = await rejectionOf(store.commit({ machines: [create(machine('tx-big'))], history: entries }));
      expect(error).toBeInstanceOf(Error);
      expect(error).not.toBeInstanceOf(StaleWriteError);
      expect(await store.getMachine('tx-big')).toBeNull();
      expect(await allHistory('tx-big')).toEqual([]);
      // Exactly the limit fits.
      await store.commit({ machines: [create(machine('tx-big'))], history: entries.slice(1) });
      expect(await allHistory('tx-big')).toHaveLength(99);
    });

    it('one record twice in a transaction is refused and nothing is written', async () => {
      expect(await rejectionOf(store.commit({ machines: [create(machine('tx-twice')), create(machine('tx-twice', { rack: 'r2' }))], history: [] }))).toBeInstanceOf(Error);
      expect(await store.getMachine('tx-twice')).toBeNull();
    });
  });
}
