import { catalogRacks, typeRacks } from '#domain/machines/catalog.ts';
import type { Machine } from '#domain/core/model.ts';
import type { Aggregate } from '#store/aggregate.ts';
import {
  allocatableDomainPartition,
  allocatableDomainPrefix,
  allocatablePartition,
  allocatableSortKey,
  fromMachineItem,
  machineIdOfKey,
  machineItem,
  machineKey,
  machineKind,
  REPAIR_PARTITION,
  reservedPoolPartition,
} from '#store/aggregates/machine-items.ts';
import { readCatalog } from '#store/aggregates/site.ts';
import type { ItemQuery } from '#store/item-access.ts';
import { allItems, RACKS_AT_ONCE, readInOrder } from '#store/item-reads.ts';
import { inLegacyLayout, LEGACY_MACHINE_KIND, legacyAllocatablePartition } from '#store/legacy-layout.ts';
import type { Page } from '#store/paging.ts';
import type { PageRequest } from '#store/port.ts';
import { indexes } from '#store/table.ts';

/**
 * A page of a type's free machines: all in rack order, one rack's, all with an NVLink domain in domain order, one
 * domain's; of the shared pool, or with `reservedFor`, those the org's reservations hold.
 */
export type AllocatablePage = PageRequest & {
  rack?: string | undefined;
  nvlinkDomain?: string | undefined;
  byNvlinkDomain?: boolean | undefined;
  reservedFor?: string | undefined;
};

export interface MachineStore {
  getMachine(id: string): Promise<Machine | null>;
  /** Many machines at once (BatchGetItem): those found, by id. */
  getMachines(ids: string[]): Promise<Map<string, Machine>>;
  /**
   * Candidates for allocation: up to `limit` machines of the type's allocatable index, ids only (no machine read),
   * rack by rack (a Query a rack, several at once). With `from`, from that rack on, so that creates starting at
   * different racks read different machines, and then the racks before it, only while fewer than `from.enough` were
   * found. The index may lag, so the claiming commit re-checks. With `reservedFor`, the machines the org's
   * reservations hold instead of the shared pool.
   */
  allocatableMachineIds(machineType: string, limit?: number, from?: { rack: string; enough: number }, reservedFor?: string): Promise<string[]>;
  /**
   * The allocatable index page by page, ordered by rack and then id, so a rack's free machines come together;
   * with `rack`, that rack's free machines only. A page reads a bounded number of racks: it may come back short, even
   * empty, with a nextToken. With `byNvlinkDomain`, the free machines that carry an NVLink
   * domain, ordered by domain and then id; with `nvlinkDomain`, that domain's only. The index may lag, as above.
   */
  allocatableMachinesPage(machineType: string, page: AllocatablePage): Promise<Page<Machine>>;
  listMachines(page: PageRequest): Promise<Page<Machine>>;
  /** Every claimed repair, then the unclaimed repair requests older than `unclaimedBefore`, oldest first: one Query. */
  repairsToWatch(unclaimedBefore: Date): Promise<Machine[]>;
  /** Machines with a repair request: claimed (in-repair) ones first, then unclaimed ones, each stage oldest first. */
  machinesAwaitingRepair(page: PageRequest): Promise<Page<Machine>>;
  /**
   * Write machines just read as absent, in batches (BatchWriteItem): no guard, so only for new records nobody else
   * can have written since (a concurrent registration of the same id writes the same kind of new record). Not
   * all-or-nothing: a crash leaves some written, and registering again writes the rest.
   */
  createMachines(machines: Machine[]): Promise<void>;
}

export const machines: Aggregate<MachineStore> = {
  writes: (change, to) => {
    for (const pair of change.machines ?? []) to.guarded(pair, (machine) => machineItem(machine, to.due.machine(machine)));
  },
  store: (core) => {
    const { items, layout, due } = core;
    return {
      async getMachine(id) {
        const item = await items.getItem(machineKey(id));
        return item ? fromMachineItem(item) : null;
      },

      async getMachines(ids) {
        const found = await items.getItems([...new Set(ids)].map(machineKey));
        return new Map(found.map((item) => [String(item.id), fromMachineItem(item)]));
      },

      /**
       * From `from.rack` on through the type's racks (the catalog's, by name), then from the first: a keys-only Query a
       * rack, RACKS_AT_ONCE at once, each for what is still wanted, until `limit` (with `from`: `from.enough`) are found.
       * A type nearly exhausted reads every rack of it (docs/design.md, "Partition keys under load").
       */
      async allocatableMachineIds(machineType, limit = 100, from, reservedFor) {
        if (reservedFor !== undefined) {
          const query = { index: indexes.allocatable, partition: reservedPoolPartition(machineType, reservedFor), limit, entriesOnly: true };
          return (await items.queryItems(query)).items.map((entry) => machineIdOfKey(String(entry.pk)));
        }
        const racks = typeRacks(await readCatalog(core), machineType);
        const start = Math.max(0, from === undefined ? 0 : racks.findIndex((rack) => rack >= from.rack));
        const enough = from === undefined ? limit : Math.min(from.enough, limit);
        const ids: string[] = [];
        // The racks from `from.rack` on, then (only when they fell short) those before it: no round spans the two.
        for (const stretch of [racks.slice(start), racks.slice(0, start)]) {
          for (let at = 0; at < stretch.length && ids.length < enough; at += RACKS_AT_ONCE) {
            const round = stretch.slice(at, at + RACKS_AT_ONCE).map((rack) => allocatablePartition(machineType, rack));
            const room = limit - ids.length;
            const pages = await Promise.all(
              round.map((partition) => items.queryItems({ index: indexes.allocatable, partition, limit: room, entriesOnly: true })),
            );
            for (const page of pages) ids.push(...page.items.slice(0, limit - ids.length).map((entry) => machineIdOfKey(String(entry.pk))));
          }
        }
        for (const partition of ids.length < enough ? await layout.legacyPartitions(legacyAllocatablePartition(machineType)) : []) {
          const page = await items.queryItems({ index: indexes.allocatable, partition, limit: limit - ids.length, entriesOnly: true });
          ids.push(...page.items.map((entry) => machineIdOfKey(String(entry.pk))));
        }
        return ids;
      },

      async allocatableMachinesPage(machineType, page) {
        const { rack, nvlinkDomain, reservedFor } = page;
        if (nvlinkDomain !== undefined || page.byNvlinkDomain === true) {
          const result = await items.queryItems(
            {
              index: indexes.allocatableByDomain,
              partition: allocatableDomainPartition(machineType, reservedFor),
              ...(nvlinkDomain === undefined ? {} : { sort: { beginsWith: allocatableDomainPrefix(nvlinkDomain) } }),
              limit: page.limit,
            },
            page.nextToken,
          );
          // A domain whose name extends this one's with `#` shares the prefix: it is not this one.
          const found = result.items.map(fromMachineItem).filter((machine) => nvlinkDomain === undefined || machine.nvlinkDomain === nvlinkDomain);
          return { items: found, nextToken: result.nextToken };
        }
        if (reservedFor !== undefined) {
          const partition = reservedPoolPartition(machineType, reservedFor);
          const sort = rack === undefined ? {} : { sort: { beginsWith: allocatableSortKey(rack, '') } };
          const result = await items.queryItems({ index: indexes.allocatable, partition, ...sort, limit: page.limit }, page.nextToken);
          // A rack whose name extends this one's with `#` shares the prefix: it is not this one.
          return { items: result.items.map(fromMachineItem).filter((machine) => rack === undefined || machine.rack === rack), nextToken: result.nextToken };
        }
        const racks = rack === undefined ? typeRacks(await readCatalog(core), machineType) : [rack];
        const legacy = (await layout.legacyPartitions(legacyAllocatablePartition(machineType))).map(
          (partition): ItemQuery => ({
            index: indexes.allocatable,
            partition,
            ...(rack === undefined ? {} : { sort: { beginsWith: allocatableSortKey(rack, '') } }),
          }),
        );
        const queries = [...legacy, ...racks.map((r): ItemQuery => ({ index: indexes.allocatable, partition: allocatablePartition(machineType, r) }))];
        const result = await readInOrder(items, `allocatable:${machineType}`, queries, page);
        return { items: result.items.map(fromMachineItem), nextToken: result.nextToken };
      },

      /** Rack by rack (the catalog's racks, by name), each rack's machines by id: a Query of byKind per rack read. */
      async listMachines(page) {
        const partitions = [...(await layout.legacyPartitions(LEGACY_MACHINE_KIND)), ...catalogRacks(await readCatalog(core)).map(machineKind)];
        const queries = partitions.map((partition): ItemQuery => ({ index: indexes.byKind, partition }));
        const result = await readInOrder(items, 'machines', queries, page);
        return { items: result.items.map(fromMachineItem), nextToken: result.nextToken };
      },

      /** Claimed repairs are all read: their deadlines depend on each machine's repair_eta. Costs what is in repair. */
      async repairsToWatch(unclaimedBefore) {
        // One range of the index: `in-repair#…` sorts before `unclaimed#…`, and unclaimed ones by request time.
        const between: [string, string] = ['in-repair#', `unclaimed#${unclaimedBefore.toISOString()}`];
        return (await allItems(items, { index: indexes.repairRequested, partition: REPAIR_PARTITION, sort: { between } })).map(fromMachineItem);
      },

      async machinesAwaitingRepair(page) {
        const result = await items.queryItems({ index: indexes.repairRequested, partition: REPAIR_PARTITION, limit: page.limit }, page.nextToken);
        return { items: result.items.map(fromMachineItem), nextToken: result.nextToken };
      },

      async createMachines(created) {
        const legacy = await layout.legacyWrites();
        await items.putItems(created.map((machine) => machineItem(machine, due.machine(machine))).map((item) => (legacy ? inLegacyLayout(item) : item)));
      },
    };
  },
};
