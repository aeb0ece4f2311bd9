import { beforeAll, describe, expect, it } from 'vitest';
import { applyDelta, shardOf, summaryChange } from '#domain/fleet-summary.ts';
import type { Change } from '#domain/change.ts';
import { finishCleanup, claimCleanup, defaultCleanupTimings } from '#domain/cleanup.ts';
import { inAllocatableIndex } from '#domain/health.ts';
import { planHeartbeat, rosterDigest } from '#domain/heartbeat.ts';
import { assignInstance, releaseInstance } from '#domain/instances.ts';
import { registerMachine } from '#domain/machines.ts';
import type { HealthOverride, HistoryEntry, Instance, InstanceStatus, Machine } from '#domain/model.ts';
import { Rejection } from '#domain/rejection.ts';
import { addMs, iso } from '#domain/time.ts';
import { StaleWriteError, type FleetStore } from '#store/port.ts';
import { aMachine, aMetaInstance, aRepairRequest, anInstance, T0 } from './fixtures.ts';

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
      await store.commit({ machines: [...a.machines!, ...b.machines!], history: [...a.history, ...b.history] });

      expect(await store.getMachine('c-a')).toEqual({ ...a.machines![0]!.after, version: 0 });
      expect(await store.getMachine('c-b')).toEqual({ ...b.machines![0]!.after, version: 0 });
      expect(await allHistory('c-a')).toEqual(a.history);
      expect(await allHistory('c-b')).toEqual(b.history);

      const read = (await store.getMachine('c-a'))!;
      const { change, instance: created } = assignInstance(read, { id: 'c-i', org: 'acme', name: 'job', labels: {}, clientToken: 'ct', createdBy: 'alice' }, at(1_000));
      await store.commit(change);

      expect(await store.getMachine('c-a')).toEqual({ ...change.machines![0]!.after, version: 1 });
      expect(await store.getInstance('c-i')).toEqual({ ...created, version: 0 });
      expect((await allHistory('c-a')).map((h) => h.action)).toEqual(['instance-created', 'machine-registered']);
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
      expect(await rejectionOf(store.commit(again))).toBeInstanceOf(StaleWriteError);
      expect(await store.getMachine('dup-m')).toEqual(existing);
      expect(await allHistory('dup-m')).toHaveLength(1);

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
      expect(await allHistory('race-m')).toHaveLength(2);
    });
  });

  describe('allocatable index', () => {
    const preventing = aRepairRequest('alloc-m');
    const healthy: HealthOverride = { source: 'mark-healthy', mode: 'replace', alerts: [], createdBy: 'ops', createdAt: iso(T0) };

    it('holds a machine exactly while inAllocatableIndex says so', async () => {
      const type = 'alloc-type';
      const ids = async () => (await store.allocatableMachines(type)).map((m) => m.id);
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
      // What the index returns is the machine itself.
      expect(await store.allocatableMachines(type)).toEqual([await store.getMachine('alloc-m')]);

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

      await update((m) => claimCleanup(m, null, at(3_000), defaultCleanupTimings)!);
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
      expect((await store.allocatableMachines('moved-type')).map((m) => m.id)).toEqual(['alloc-m']);
      expect((await store.allocatableMachines('other-type')).map((m) => m.id)).toEqual(['alloc-other']);
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
      expect(await store.allocatableMachines(type)).toEqual([]);
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
        (await store.dueEntities(when, 500))
          .filter((ref) => ref.id.startsWith('due-'))
          .map((ref) => `${ref.entity}:${ref.id}`)
          .sort();

      expect(await due(now)).toEqual(['instance:due-i-expired', 'instance:due-i-pending', 'machine:due-m-expired', 'machine:due-m-pending']);
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
    });

    it('does not mix in the machine record itself', async () => {
      await register('hist-reg');
      expect((await allHistory('hist-reg')).map((h) => h.action)).toEqual(['machine-registered']);
    });
  });

  describe('site heartbeat', () => {
    it('the first write: of two concurrent writers with nothing stored, one wins', async () => {
      const fresh = await newStore();
      expect(await fresh.getSiteHeartbeat()).toBeNull();
      const results = await Promise.allSettled([
        fresh.putSiteHeartbeat(null, { rosterSeenAt: iso(at(0)), digest: 'd-one', machineCount: 1 }),
        fresh.putSiteHeartbeat(null, { rosterSeenAt: iso(at(1)), digest: 'd-two', machineCount: 2 }),
      ]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      expect((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason).toBeInstanceOf(StaleWriteError);
      const stored = (await fresh.getSiteHeartbeat())!;
      expect(stored.version).toBe(1);
      expect(['d-one', 'd-two']).toContain(stored.digest);
    });

    it('is guarded by version: of two writers from the same read, one wins and the other gets StaleWriteError', async () => {
      const fresh = await newStore();
      await fresh.putSiteHeartbeat(null, { rosterSeenAt: iso(at(0)), digest: 'd0', machineCount: 3 });
      const read = (await fresh.getSiteHeartbeat())!;
      expect(read).toEqual({ rosterSeenAt: iso(at(0)), digest: 'd0', machineCount: 3, version: 1 });

      const results = await Promise.allSettled([
        fresh.putSiteHeartbeat(read, { rosterSeenAt: iso(at(10_000)), digest: 'd-a', machineCount: 4 }),
        fresh.putSiteHeartbeat(read, { rosterSeenAt: iso(at(10_001)), digest: 'd-b', machineCount: 5 }),
      ]);
      const won = results.findIndex((r) => r.status === 'fulfilled');
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      expect((results[1 - won] as PromiseRejectedResult).reason).toBeInstanceOf(StaleWriteError);
      const stored = (await fresh.getSiteHeartbeat())!;
      expect(stored.version).toBe(2);
      expect(stored.digest).toBe(won === 0 ? 'd-a' : 'd-b');

      // The loser's read is stale for good.
      expect(await rejectionOf(fresh.putSiteHeartbeat(read, { rosterSeenAt: iso(at(20_000)), digest: 'd-c', machineCount: 1 }))).toBeInstanceOf(StaleWriteError);
      expect((await fresh.getSiteHeartbeat())!.digest).toBe(stored.digest);
    });

    it('a commit with resetHeartbeatRoster bumps the version, so a heartbeat based on the old read loses', async () => {
      const fresh = await newStore();
      const digest = rosterDigest(['hb-a']);
      await fresh.putSiteHeartbeat(null, { rosterSeenAt: iso(at(0)), digest, machineCount: 1 });
      const oldRead = (await fresh.getSiteHeartbeat())!;

      const registration = registerMachine(null, { id: 'hb-new', machineType: 'gb200' }, 'ops', at(1_000))!;
      await fresh.commit({ ...registration, resetHeartbeatRoster: true });

      const afterReset = (await fresh.getSiteHeartbeat())!;
      expect(afterReset).toEqual({ rosterSeenAt: iso(at(0)), digest: 'reset', machineCount: 1, version: 2 });
      // The next beat with the same roster compares afresh.
      expect(planHeartbeat(afterReset, digest, at(2_000), 30_000)).toEqual({ kind: 'reconcile-roster' });

      // A beat that read before the registration must not restore the old digest.
      expect(await rejectionOf(fresh.putSiteHeartbeat(oldRead, { rosterSeenAt: iso(at(2_000)), digest, machineCount: 1 }))).toBeInstanceOf(StaleWriteError);
      expect((await fresh.getSiteHeartbeat())!.digest).toBe('reset');

      await fresh.putSiteHeartbeat(afterReset, { rosterSeenAt: iso(at(3_000)), digest: rosterDigest(['hb-a', 'hb-new']), machineCount: 2 });
      expect((await fresh.getSiteHeartbeat())!).toMatchObject({ digest: rosterDigest(['hb-a', 'hb-new']), version: 3 });
    });

    it('a reset before any heartbeat was stored makes a first heartbeat based on "nothing stored" lose', async () => {
      const fresh = await newStore();
      await fresh.commit({ ...registerMachine(null, { id: 'hb-first', machineType: 'gb200' }, 'ops', T0)!, resetHeartbeatRoster: true });
      const stored = (await fresh.getSiteHeartbeat())!;
      expect(stored).toMatchObject({ digest: 'reset', version: 1 });
      expect(await rejectionOf(fresh.putSiteHeartbeat(null, { rosterSeenAt: iso(T0), digest: 'd', machineCount: 1 }))).toBeInstanceOf(StaleWriteError);
      await fresh.putSiteHeartbeat(stored, { rosterSeenAt: iso(T0), digest: 'd', machineCount: 1 });
      expect((await fresh.getSiteHeartbeat())!).toEqual({ rosterSeenAt: iso(T0), digest: 'd', machineCount: 1, version: 2 });
    });

    it('a stale commit does not reset the roster either', async () => {
      const fresh = await newStore();
      await fresh.putSiteHeartbeat(null, { rosterSeenAt: iso(T0), digest: 'd', machineCount: 0 });
      await fresh.commit(registerMachine(null, { id: 'hb-dup', machineType: 'gb200' }, 'ops', T0)!);
      const duplicate = registerMachine(null, { id: 'hb-dup', machineType: 'gb200' }, 'ops', T0)!;
      expect(await rejectionOf(fresh.commit({ ...duplicate, resetHeartbeatRoster: true }))).toBeInstanceOf(StaleWriteError);
      expect(await fresh.getSiteHeartbeat()).toEqual({ rosterSeenAt: iso(T0), digest: 'd', machineCount: 0, version: 1 });
    });
  });


  describe('page tokens', () => {
    const b64 = (text: string) => Buffer.from(text).toString('base64url');

    it('a list given a garbage token refuses with the 422 Rejection', async () => {
      const thrown = await rejectionOf(store.listInstances('acme', { limit: 5, nextToken: 'not-a-token' }));
      expect(thrown).toBeInstanceOf(Rejection);
      expect(thrown).toMatchObject({ status: 422, code: 'validation-failed' });
      expect(await rejectionOf(store.listHistory('hist-m', { limit: 5, nextToken: b64('[]') }))).toBeInstanceOf(Rejection);
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
          create(instance('loner')),
        ],
        history: [],
      });
    });

    it('membersOf holds the instances bound to the meta-instance, whatever their state', async () => {
      expect((await fresh.membersOf('mi-ready')).map((i) => i.id).sort()).toEqual(['mem-a', 'mem-b']);
      expect(await fresh.membersOf('mi-nobody')).toEqual([]);
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
      const due = async (when: Date) => (await fresh.dueEntities(when, 50)).filter((ref) => ref.entity === 'meta-instance').map((ref) => ref.id).sort();
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

    it('repairsToWatch: unclaimed requests older than the cut-off, and every claimed repair', async () => {
      expect((await fresh.repairsToWatch(at(30 * 60_000))).map((m) => m.id)).toEqual(['lm-early', 'lm-claimed']);
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
      expect(thrown).toMatchObject({ status: 422, code: 'validation-failed' });
    });
  });

  describe('fleet summary aggregates', () => {
    it('a rack and its shard are written together, guarded by version; racks page by rack, one shard at a time', async () => {
      const racks = ['sum-r1', 'sum-r2', 'sum-r3'].map((rack) => {
        const m = machine(`${rack}-m`, { machineType: 'sumtype', rack, version: 3 });
        return summaryChange({ machine: m, rack: null, shard: null })!;
      });
      for (const change of racks) {
        const pair = change.fleetSummary!.shards[0]!;
        const stored = await store.getSummaryShard('sumtype', pair.after.shard);
        await store.commit({ ...change, fleetSummary: { racks: change.fleetSummary!.racks, shards: [{ before: stored, after: { ...pair.after, counters: applyDelta(stored?.counters ?? {}, pair.after.counters) } }] } });
      }
      const rack = (await store.getRackAggregate('sumtype', 'sum-r1'))!;
      expect(rack).toMatchObject({ machineType: 'sumtype', rack: 'sum-r1', version: 0, machines: { 'sum-r1-m': { version: 3, state: 'Ready', live: true } } });
      const shards = (await store.summaryShards()).filter((s) => s.machineType === 'sumtype');
      expect(shards.reduce((n, s) => n + (s.counters.machines ?? 0), 0)).toBe(3);

      // A second writer from the same read loses, and the shard is not touched by the lost transaction.
      const stale = summaryChange({ machine: machine('sum-r1-m', { machineType: 'sumtype', rack: 'sum-r1', version: 4 }), rack: { ...rack, version: -5 }, shard: null })!;
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
