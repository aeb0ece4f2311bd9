import { registerMachine } from '#domain/machines/machines.ts';
import type { HistoryEntry, Instance, Machine } from '#domain/core/model.ts';
import { addMs } from '#domain/core/time.ts';
import { catalogue as catalogueIn } from '#test/support/catalogue.ts';
import type { FleetStore } from '#store/port.ts';
import { aMachine, anInstance, T0 } from '../fixtures.ts';

/** What every group of the store contract works with: the store under test (empty at the start) and small helpers. */
export interface ContractKit {
  readonly store: FleetStore;
  newStore: () => Promise<FleetStore>;
  at(ms: number): Date;
  machine(id: string, over?: Partial<Machine>): Machine;
  instance(id: string, over?: Partial<Instance>): Instance;
  create<T>(after: T): { before: null; after: T };
  register(id: string, machineType?: string): Promise<Machine>;
  /** Adds machines' types, racks and domains to the catalog, as a registration does after writing them. */
  catalogue(machines: readonly Machine[], store?: FleetStore): Promise<void>;
  allHistory(machineId: string): Promise<HistoryEntry[]>;
  rejectionOf(promise: Promise<unknown>): Promise<unknown>;
}

export function contractKit(newStore: () => Promise<FleetStore>, current: () => FleetStore): ContractKit {
  const catalogue = (machines: readonly Machine[], store = current()) => catalogueIn(store, machines);
  return {
    get store() {
      return current();
    },
    newStore,
    at: (ms) => addMs(T0, ms),
    machine: (id, over = {}) => aMachine({ id, ...over }),
    instance: (id, over = {}) => anInstance({ id, name: id, machineId: 'm-x', siteName: id, creation: { clientToken: `ct-${id}`, phase: 'pending' }, ...over }),
    create: (after) => ({ before: null, after }),
    async register(id, machineType = 'gb200') {
      const change = registerMachine(null, { id, machineType, rack: 'r1' }, 'ops', T0)!;
      await current().commit(change);
      await catalogue(change.machines!.map((m) => m.after));
      return (await current().getMachine(id))!;
    },
    catalogue,
    async allHistory(machineId) {
      return (await current().listHistory(machineId, { limit: 500 })).items;
    },
    async rejectionOf(promise) {
      try {
        await promise;
      } catch (error) {
        return error;
      }
      throw new Error('expected a rejection');
    },
  };
}
