import { describe, expect, it } from 'vitest';
import { registerMachine } from '#domain/machines/machines.ts';
import type { Machine } from '#domain/core/model.ts';
import { injectIndexLag } from '#local/aws-semantics/index-lag.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import { createDocumentClient } from '#store/client.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { MemoryFleetStore } from '#store/memory-store.ts';
import type { FleetStore } from '#store/port.ts';
import { anInstance, T0 } from '#test/support/fixtures.ts';
import { catalogue } from '#test/support/catalogue.ts';
import { freshTables } from '#test/support/tables.ts';

// FLEETWARD_AWS_SEMANTICS=index-lag, and the in-memory store's index lag: index reads, and Queries not strongly
// consistent, see the table as it was LAG ms ago on the clock the test moves; strongly consistent reads see it now.

const LAG = 1_000;

describe.each([
  {
    implementation: 'DynamoFleetStore with the index-lag client',
    newStore: async (now: () => number): Promise<FleetStore> => {
      const { client, endpoint, names } = await freshTables('lag');
      injectIndexLag(client, { lagMs: LAG, images: createDocumentClient(endpoint), now });
      return new DynamoFleetStore(client, names.table, dueTimes);
    },
  },
  {
    implementation: 'MemoryFleetStore with indexLagMs',
    newStore: async (now: () => number): Promise<FleetStore> => new MemoryFleetStore(dueTimes, { indexLagMs: LAG, now }),
  },
])('$implementation', ({ newStore }) => {
  const clock = () => {
    let now = 1_000_000;
    return { now: () => now, advance: (ms: number) => void (now += ms) };
  };

  const register = async (store: FleetStore, id: string) => {
    await store.commit(registerMachine(null, { id, machineType: 'lag-type', rack: 'r1' }, 'ops', T0)!);
    const machine = (await store.getMachine(id))!;
    await catalogue(store, [machine]);
    return machine;
  };
  const take = async (store: FleetStore, machine: Machine) => {
    await store.commit({ machines: [{ before: machine, after: { ...machine, state: 'Assigned', instanceId: 'i-x' } }], history: [] });
  };

  it('a just-written item is absent from an index read within the lag, and there after it', async () => {
    const time = clock();
    const store = await newStore(time.now);
    await register(store, 'm-new');
    expect(await store.getMachine('m-new')).not.toBeNull();
    expect(await store.allocatableMachineIds('lag-type')).toEqual([]);
    expect((await store.allocatableMachinesPage('lag-type', { limit: 10 })).items).toEqual([]);
    time.advance(LAG - 1);
    expect(await store.allocatableMachineIds('lag-type')).toEqual([]);
    time.advance(2);
    expect(await store.allocatableMachineIds('lag-type')).toEqual(['m-new']);
    expect((await store.allocatableMachinesPage('lag-type', { limit: 10 })).items.map((m) => m.id)).toEqual(['m-new']);
  });

  it('an item just removed from an index still shows within the lag; a keys-only page reads it as it is now', async () => {
    const time = clock();
    const store = await newStore(time.now);
    const machine = await register(store, 'm-taken');
    await register(store, 'm-free');
    time.advance(LAG + 1);
    await take(store, machine);
    expect(await store.allocatableMachineIds('lag-type')).toEqual(['m-free', 'm-taken']);
    // The index still names it, but the item read by its key is no longer in the index's partition: left out.
    expect((await store.allocatableMachinesPage('lag-type', { limit: 10 })).items.map((m) => m.id)).toEqual(['m-free']);
    time.advance(LAG + 1);
    expect(await store.allocatableMachineIds('lag-type')).toEqual(['m-free']);
  });

  it('an index that projects all shows the item as it was; counts lag too', async () => {
    const time = clock();
    const store = await newStore(time.now);
    const member = anInstance({ id: 'i-member', org: 'lag-org', metaInstanceId: 'mi-lag', replacement: true });
    const listed = async () => (await store.listInstances('lag-org', { limit: 10 })).items.map((i) => i.status);
    await store.commit({ instances: [{ before: null, after: member }], history: [] });
    expect(await listed()).toEqual([]);
    expect(await store.replacementsInFlight()).toBe(0);
    time.advance(LAG + 1);
    expect(await listed()).toEqual(['Provisioning']);
    expect(await store.replacementsInFlight()).toBe(1);

    const stored = (await store.getInstance('i-member'))!;
    await store.commit({ instances: [{ before: stored, after: { ...stored, status: 'Ready' } }], history: [] });
    expect(await listed()).toEqual(['Provisioning']);
    expect(await store.replacementsInFlight()).toBe(1);
    expect((await store.getRecords({ instances: ['i-member'] })).instances.get('i-member')?.status).toBe('Ready');
    time.advance(LAG + 1);
    expect(await listed()).toEqual(['Ready']);
    expect(await store.replacementsInFlight()).toBe(0);
  });

  it('a filtered, newest-first listing lags as a whole: the filter sees each item as it was', async () => {
    const time = clock();
    const store = await newStore(time.now);
    const old = anInstance({ id: 'i-old', createdAt: '2025-03-01T11:00:00.000Z' });
    await store.commit({ instances: [{ before: null, after: old }], history: [] });
    time.advance(LAG + 1);
    await store.commit({ instances: [{ before: null, after: anInstance({ id: 'i-new', createdAt: '2025-03-01T12:00:00.000Z' }) }], history: [] });
    await store.commit({ instances: [{ before: (await store.getInstance('i-old'))!, after: { ...old, status: 'Ready' } }], history: [] });
    const listed = async (status?: string) => (await store.listInstances('acme', { limit: 10, status })).items.map((i) => i.id);
    expect(await listed()).toEqual(['i-old']);
    expect(await listed('Provisioning')).toEqual(['i-old']);
    expect(await listed('Ready')).toEqual([]);
    time.advance(LAG + 1);
    expect(await listed()).toEqual(['i-new', 'i-old']);
    expect(await listed('Ready')).toEqual(['i-old']);
  });

  it('a page token pages the lagging index: an item written since is on no page', async () => {
    const time = clock();
    const store = await newStore(time.now);
    for (const id of ['m-a', 'm-b', 'm-c']) await register(store, id);
    time.advance(LAG + 1);
    await register(store, 'm-d');
    const first = await store.allocatableMachinesPage('lag-type', { limit: 2 });
    const second = await store.allocatableMachinesPage('lag-type', { limit: 2, nextToken: first.nextToken });
    expect([...first.items, ...second.items].map((m) => m.id)).toEqual(['m-a', 'm-b', 'm-c']);
  });
});
