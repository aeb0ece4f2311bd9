import { beforeAll, describe, expect, it } from 'vitest';
import type { Change } from '#domain/core/change.ts';
import { finishCleanup, claimCleanup, cleanupTimings } from '#domain/instances/cleanup.ts';
import { inAllocatableIndex } from '#domain/core/health.ts';
import { assignInstance, releaseInstance } from '#domain/instances/instances.ts';
import { registerMachine } from '#domain/machines/machines.ts';
import type { HealthOverride, Machine } from '#domain/core/model.ts';
import { addMs, iso } from '#domain/core/time.ts';
import { duePartitionOf, duePartitions } from '#store/aggregates/due.ts';
import { keys } from '#store/keys.ts';
import { listingPartitionOf } from '#store/item-codec.ts';
import { META_LISTING } from '#store/aggregates/meta-instance-items.ts';
import type { FleetStore } from '#store/port.ts';
import { aMetaInstance, aRepairRequest, T0 } from '../fixtures.ts';
import type { ContractKit } from './kit.ts';

export function indexesContract(kit: ContractKit): void {
  const { at, machine, instance, create, register, newStore } = kit;

  describe('allocatable index', () => {
    const preventing = aRepairRequest('alloc-m');
    const healthy: HealthOverride = { source: 'mark-healthy', mode: 'replace', alerts: [], createdBy: 'ops', createdAt: iso(T0) };

    it('holds a machine exactly while inAllocatableIndex says so', async () => {
      const type = 'alloc-type';
      const ids = async () => await kit.store.allocatableMachineIds(type);
      const expectIndexed = async (expected: boolean) => {
        const m = (await kit.store.getMachine('alloc-m'))!;
        expect(inAllocatableIndex(m)).toBe(expected);
        expect(await ids()).toEqual(expected ? ['alloc-m'] : []);
      };
      const update = async (edit: (m: Machine) => Change) => {
        await kit.store.commit(edit((await kit.store.getMachine('alloc-m'))!));
      };

      await register('alloc-m', type);
      await register('alloc-other', 'other-type');
      await expectIndexed(true);
      // Its ids alone are one read; a page of it is the machines themselves, read from the table.
      expect(await kit.store.allocatableMachineIds(type)).toEqual(['alloc-m']);
      expect((await kit.store.allocatableMachinesPage(type, { limit: 10 })).items).toEqual([await kit.store.getMachine('alloc-m')]);

      // Heartbeat freshness is not the index's business.
      await update((m) => ({ machines: [{ before: m, after: { ...m, heartbeatLive: false, lastHeartbeatAt: iso(at(-3_600_000)) } }], history: [] }));
      await expectIndexed(true);

      await update((m) => assignInstance(m, { id: 'alloc-i', org: 'acme', name: 'job', labels: {}, clientToken: 'ct', createdBy: 'alice' }, at(1_000)).change);
      await expectIndexed(false);

      const released = releaseInstance(
        (await kit.store.getInstance('alloc-i'))!,
        (await kit.store.getMachine('alloc-m'))!,
        { actor: 'alice', isRepairTenant: false, policy: { kind: 'off' as const } },
        at(2_000),
      );
      expect(released.kind).toBe('release');
      if (released.kind === 'release') await kit.store.commit(released.change);
      expect((await kit.store.getMachine('alloc-m'))!.state).toBe('Cleanup');
      await expectIndexed(false);

      await update((m) => claimCleanup(m, null, at(3_000), cleanupTimings(60_000))!);
      await expectIndexed(false);

      await update((m) => finishCleanup(m, null, { ok: true }, 'site-agent', at(4_000)));
      expect((await kit.store.getMachine('alloc-m'))!.state).toBe('Ready');
      await expectIndexed(true);

      await update((m) => ({ machines: [{ before: m, after: { ...m, healthOverrides: [preventing] } }], history: [] }));
      await expectIndexed(false);

      await update((m) => ({ machines: [{ before: m, after: { ...m, healthOverrides: [preventing, healthy] } }], history: [] }));
      await expectIndexed(true);

      // Type changes move it to the other type's partition.
      await update((m) => registerMachine(m, { id: 'alloc-m', machineType: 'moved-type' }, 'ops', at(5_000))!);
      await kit.catalogue([(await kit.store.getMachine('alloc-m'))!]);
      expect(await ids()).toEqual([]);
      expect(await kit.store.allocatableMachineIds('moved-type')).toEqual(['alloc-m']);
      expect(await kit.store.allocatableMachineIds('other-type')).toEqual(['alloc-other']);
    });

    it('a failed cleanup keeps it out', async () => {
      const type = 'alloc-failed-type';
      const inCleanup = machine('alloc-f', {
        machineType: type,
        state: 'Cleanup',
        instanceId: 'i-f',
        cleanup: { instanceId: 'i-f', phase: 'requested', attempts: 1, leaseUntil: iso(at(60_000)) },
      });
      await kit.store.commit({ machines: [create(inCleanup)], history: [] });
      await kit.catalogue([inCleanup]);
      const read = (await kit.store.getMachine('alloc-f'))!;
      await kit.store.commit(finishCleanup(read, null, { ok: false, message: 'GPU stuck' }, 'site-agent', at(1_000)));
      const failed = (await kit.store.getMachine('alloc-f'))!;
      expect(failed.cleanup?.phase).toBe('failed');
      expect(inAllocatableIndex(failed)).toBe(false);
      expect(await kit.store.allocatableMachineIds(type)).toEqual([]);
    });
  });

  describe('allocatable index by rack', () => {
    const type = 'rack-type';
    const ids = (machines: Machine[]) => machines.map((m) => m.id);

    beforeAll(async () => {
      // Ids and racks in opposite orders: the index orders by rack first. r1 is a prefix of r10 by name.
      const placed: Array<[string, string]> = [
        ['rk-a', 'r2'],
        ['rk-b', 'r10'],
        ['rk-c', 'r1'],
        ['rk-d', 'r2'],
        ['rk-e', 'r1'],
      ];
      const changes = placed.map(([id, rack]) => registerMachine(null, { id, machineType: type, rack }, 'ops', T0)!);
      await kit.store.commit({ machines: changes.flatMap((c) => c.machines!), history: [] });
      await kit.catalogue(changes.flatMap((c) => c.machines!.map((m) => m.after)));
      const taken = (await kit.store.getMachine('rk-d'))!;
      await kit.store.commit(assignInstance(taken, { id: 'rk-i', org: 'acme', name: 'job', labels: {}, clientToken: 'ct-rk', createdBy: 'alice' }, T0).change);
    });

    it('pages through the free machines of a type rack by rack, each page continuing where the last stopped', async () => {
      const first = await kit.store.allocatableMachinesPage(type, { limit: 2 });
      expect(ids(first.items)).toEqual(['rk-c', 'rk-e']);
      expect(first.nextToken).toEqual(expect.any(String));
      const second = await kit.store.allocatableMachinesPage(type, { limit: 2, nextToken: first.nextToken });
      expect(ids(second.items)).toEqual(['rk-b', 'rk-a']);
      // The last rack read to its end: nothing follows.
      expect(second.nextToken).toBeUndefined();
      // One rack a page: each page stops where its rack has more.
      const oneByOne: string[] = [];
      let nextToken: string | undefined;
      do {
        const page = await kit.store.allocatableMachinesPage(type, { limit: 1, nextToken });
        oneByOne.push(...ids(page.items));
        nextToken = page.nextToken;
      } while (nextToken);
      expect(oneByOne).toEqual(['rk-c', 'rk-e', 'rk-b', 'rk-a']);
    });

    it('a page reads a bounded number of racks: a stretch without free machines gives a short page and a token', async () => {
      const store = await newStore();
      const racks = Array.from({ length: 40 }, (_, i) => `sp-${String(i).padStart(2, '0')}`);
      const busy = { state: 'Assigned' as const, instanceId: 'sp-i', assignedAt: iso(T0) };
      const machines = racks.map((rack, i) => machine(`sp-m-${i}`, { machineType: 'sparse-type', rack, ...(i === 39 ? {} : busy) }));
      await store.commit({ machines: machines.map(create), history: [] });
      await kit.catalogue(machines, store);
      const first = await store.allocatableMachinesPage('sparse-type', { limit: 5 });
      expect(first.items).toEqual([]);
      expect(first.nextToken).toEqual(expect.any(String));
      // The token is this listing's: the machine listing, also read rack by rack, refuses it.
      expect(await kit.rejectionOf(store.listMachines({ limit: 5, nextToken: first.nextToken }))).toMatchObject({ status: 422, code: 'invalid-page-token' });
      const second = await store.allocatableMachinesPage('sparse-type', { limit: 5, nextToken: first.nextToken });
      expect(ids(second.items)).toEqual(['sp-m-39']);
      expect(second.nextToken).toBeUndefined();
      // Ids are read from rack to rack until found, however sparse.
      expect(await store.allocatableMachineIds('sparse-type', 5)).toEqual(['sp-m-39']);
    });

    it('reads one rack alone: only its free machines, not those of a rack whose name extends it', async () => {
      expect(ids((await kit.store.allocatableMachinesPage(type, { limit: 10, rack: 'r1' })).items)).toEqual(['rk-c', 'rk-e']);
      expect(ids((await kit.store.allocatableMachinesPage(type, { limit: 10, rack: 'r2' })).items)).toEqual(['rk-a']);
      expect((await kit.store.allocatableMachinesPage(type, { limit: 10, rack: 'r3' })).items).toEqual([]);
      expect((await kit.store.allocatableMachinesPage('other-rack-type', { limit: 10, rack: 'r1' })).items).toEqual([]);
    });
  });

  describe('allocatable index by NVLink domain', () => {
    const type = 'nvl-type';
    const ids = (machines: Machine[]) => machines.map((m) => m.id);

    beforeAll(async () => {
      // Domains across racks, ids against domain order; d1 is a prefix of d10 by name; one machine has no domain.
      const placed: Array<[string, string, string | undefined]> = [
        ['nv-a', 'r1', 'd2'],
        ['nv-b', 'r2', 'd10'],
        ['nv-c', 'r2', 'd1'],
        ['nv-d', 'r1', 'd1'],
        ['nv-e', 'r1', undefined],
        ['nv-f', 'r3', 'd2'],
      ];
      const changes = placed.map(([id, rack, nvlinkDomain]) => registerMachine(null, { id, machineType: type, rack, nvlinkDomain }, 'ops', T0)!);
      await kit.store.commit({ machines: changes.flatMap((c) => c.machines!), history: [] });
      const taken = (await kit.store.getMachine('nv-f'))!;
      await kit.store.commit(assignInstance(taken, { id: 'nv-i', org: 'acme', name: 'job', labels: {}, clientToken: 'ct-nv', createdBy: 'alice' }, T0).change);
    });

    it('pages the free machines that carry a domain domain by domain, and reads one domain alone', async () => {
      const first = await kit.store.allocatableMachinesPage(type, { limit: 2, byNvlinkDomain: true });
      expect(ids(first.items)).toEqual(['nv-c', 'nv-d']);
      const second = await kit.store.allocatableMachinesPage(type, { limit: 2, byNvlinkDomain: true, nextToken: first.nextToken });
      expect(ids(second.items)).toEqual(['nv-b', 'nv-a']);
      expect(ids((await kit.store.allocatableMachinesPage(type, { limit: 10, nvlinkDomain: 'd1' })).items)).toEqual(['nv-c', 'nv-d']);
      expect(ids((await kit.store.allocatableMachinesPage(type, { limit: 10, nvlinkDomain: 'd2' })).items)).toEqual(['nv-a']);
      expect((await kit.store.allocatableMachinesPage(type, { limit: 10, nvlinkDomain: 'd3' })).items).toEqual([]);
      // The rack order still holds every free machine, with or without a domain.
      expect(ids((await kit.store.allocatableMachinesPage(type, { limit: 10, rack: 'r1' })).items)).toEqual(['nv-a', 'nv-d', 'nv-e']);
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
      await kit.store.commit(records);

      const due = async (when: Date) =>
        (await kit.store.dueEntities(when, { limit: 500 })).items
          .filter((ref) => ref.id.startsWith('due-'))
          .map((ref) => `${ref.entity}:${ref.id}`)
          .sort();

      expect(await due(now)).toEqual(['instance:due-i-expired', 'instance:due-i-pending', 'machine:due-m-expired', 'machine:due-m-pending']);
      // Page by page, earliest first, each page going on where the last stopped: the same entries, none twice.
      const paged: string[] = [];
      let nextToken: string | undefined;
      do {
        const page = await kit.store.dueEntities(now, { limit: 1, nextToken });
        expect(page.items.length).toBeLessThanOrEqual(1);
        paged.push(...page.items.map((ref) => `${ref.entity}:${ref.id}`));
        nextToken = page.nextToken;
      } while (nextToken && paged.length < 100);
      expect(paged.filter((ref) => ref.includes(':due-')).sort()).toEqual(await due(now));
      expect(paged).toEqual((await kit.store.dueEntities(now, { limit: 500 })).items.map((ref) => `${ref.entity}:${ref.id}`));
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
      const pending = (await kit.store.getInstance('due-i-pending'))!;
      await kit.store.commit({
        instances: [{ before: pending, after: { ...pending, status: 'Ready', creation: { ...pending.creation, phase: 'done' } } }],
        history: [],
      });
      expect(await due(now)).not.toContain('instance:due-i-pending');
    });

    it('is read across its shards: pages in due-time order, each going on where every shard stopped, none twice', async () => {
      const fresh = await newStore();
      const now = at(3_600_000);
      // Leases that ran out one second apart: due in the order of their ids.
      const leaseOf = (n: number) => iso(addMs(at(0), (n + 1) * 1_000));
      const shardOf = (id: string, n: number) => duePartitionOf(keys.machine(id).pk, leaseOf(n));
      const spread = Array.from({ length: 39 }, (_, n) => `shard-m-${String(n).padStart(2, '0')}`);
      // The last one due shares the first one's shard: after the first page that shard has entries left, so its
      // cursor is a token of its own listing, whatever the number of shards.
      const sharing = Array.from({ length: 10_000 }, (_, n) => `shard-m-99-${n}`).find((id) => shardOf(id, 39) === shardOf(spread[0]!, 0))!;
      const ids = [...spread, sharing];
      const expired = (id: string, n: number) =>
        create(
          machine(id, { state: 'Cleanup', instanceId: `x-${id}`, cleanup: { instanceId: `x-${id}`, phase: 'requested', attempts: 1, leaseUntil: leaseOf(n) } }),
        );
      await fresh.commit({ machines: ids.map(expired), history: [] });
      expect(new Set(ids.map(shardOf)).size).toBeGreaterThan(10);

      const paged: string[] = [];
      let nextToken: string | undefined;
      do {
        const page = await fresh.dueEntities(now, { limit: 6, nextToken });
        expect(page.items.length).toBeLessThanOrEqual(6);
        paged.push(...page.items.map((ref) => ref.id));
        nextToken = page.nextToken;
      } while (nextToken && paged.length < 100);
      expect(paged).toEqual(ids);
      // Bounded by the time asked for, in every shard.
      expect((await fresh.dueEntities(addMs(at(0), 10_500), { limit: 100 })).items.map((ref) => ref.id)).toEqual(ids.slice(0, 10));

      const first = await fresh.dueEntities(now, { limit: 6 });
      const issued = JSON.parse(Buffer.from(first.nextToken!, 'base64url').toString('utf8')) as { scope: string; cursors: Array<string | null> };
      const cursors = issued.cursors;
      const rebuilt = (token: unknown) => Buffer.from(JSON.stringify(token)).toString('base64url');
      const tampered = (edit: (all: Array<string | null>) => unknown) => rebuilt({ ...issued, cursors: edit([...cursors]) });
      const unscoped = rebuilt({ cursors });
      const rescoped = rebuilt({ ...issued, scope: 'instances' });
      for (const token of ['garbage', tampered((all) => all.slice(1)), tampered((all) => all.map(() => 7)), unscoped, rescoped]) {
        await expect(fresh.dueEntities(now, { limit: 6, nextToken: token })).rejects.toMatchObject({ status: 422, code: 'invalid-page-token' });
      }
      // A shard's cursor moved to another shard is no token of that shard's listing.
      const moved = duePartitions.indexOf(shardOf(ids[0]!, 0));
      expect(cursors[moved]).toEqual(expect.any(String));
      expect(cursors[moved]).not.toBe('done');
      const swapped = tampered((all) => all.map((cursor, shard) => (shard === (moved + 1) % all.length ? all[moved] : cursor)));
      await expect(fresh.dueEntities(now, { limit: 6, nextToken: swapped })).rejects.toMatchObject({ status: 422, code: 'invalid-page-token' });
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
      // The site's listing is merged from its shards: these are in more than one.
      expect(new Set(['mi-other', 'mi-ready', 'mi-new', 'mi-old'].map((id) => listingPartitionOf(META_LISTING, id))).size).toBeGreaterThan(1);
      const first = await fresh.listMetaInstances(null, { limit: 3 });
      expect(first.items.map((m) => m.id)).toEqual(['mi-other', 'mi-ready', 'mi-new']);
      const rest = await fresh.listMetaInstances(null, { limit: 3, nextToken: first.nextToken });
      expect(rest).toEqual({ items: [await fresh.getMetaInstance('mi-old')], nextToken: undefined });
    });

    it('due holds meta-instances to place at their next attempt', async () => {
      const due = async (when: Date) =>
        (await fresh.dueEntities(when, { limit: 50 })).items
          .filter((ref) => ref.entity === 'meta-instance')
          .map((ref) => ref.id)
          .sort();
      expect(await due(at(8 * 60_000))).toEqual(['mi-new', 'mi-old']);
      expect(await due(at(9 * 60_000))).toEqual(['mi-new', 'mi-old', 'mi-other']);
    });
  });
}
