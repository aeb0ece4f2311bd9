import { typeRacks } from '#domain/machines/catalog.ts';
import { COUNTER_ITEMS_PER_SHARD, shardOf, SUMMARY_SHARDS, type RackAggregate, type SummaryShard } from '#domain/machines/fleet-summary.ts';
import type { Machine } from '#domain/core/model.ts';
import type { Aggregate } from '#store/aggregate.ts';
import { fromMachineItem, machineKey } from '#store/aggregates/machine-items.ts';
import { readCatalog } from '#store/aggregates/site.ts';
import { fromRackAggregateItem, fromSummaryShardItem, rackAggregateItem, summaryKeys, summaryShardItem } from '#store/aggregates/summary-items.ts';
import { decodeSequencePageToken, encodeSequencePageToken, invalidPageToken, type Page } from '#store/paging.ts';
import type { PageRequest } from '#store/port.ts';

/** Racks a page of the fleet summary's racks reads: one BatchGetItem's keys, whatever the page's limit. */
const RACKS_PER_PAGE = 100;

export interface FleetSummaryStore {
  /** The fleet summary's aggregates (domain/machines/fleet-summary.ts), kept by the stream. */
  getSummaryShard(machineType: string, shard: number): Promise<SummaryShard | null>;
  /**
   * Several racks and shards in one batch read, and the machines named by `machineIds` in the same read (strongly
   * consistent); those not stored yet are left out.
   */
  getSummaryItems(
    racks: Array<{ machineType: string; rack: string }>,
    shards: Array<{ machineType: string; shard: number }>,
    machineIds?: readonly string[],
  ): Promise<{ racks: RackAggregate[]; shards: SummaryShard[]; machines: Map<string, Machine> }>;
  /**
   * Every counter shard: a bounded read (types x shards), whatever the fleet's size. Without `nvlinkDomains`, the
   * shards' `domainCounters` are left out of the read.
   */
  summaryShards(options?: { nvlinkDomains?: boolean }): Promise<SummaryShard[]>;
  /** One type's racks with their machines' entries, grouped by counter shard (or one shard's), by rack name within. */
  listRackAggregates(machineType: string, page: PageRequest & { shard?: number | undefined }): Promise<Page<RackAggregate>>;
}

export const fleetSummary: Aggregate<FleetSummaryStore> = {
  writes: (change, to) => {
    for (const pair of change.fleetSummary?.racks ?? []) to.guarded(pair, rackAggregateItem);
    for (const pair of change.fleetSummary?.shards ?? []) to.guarded(pair, summaryShardItem);
  },
  store: (core) => {
    const { items } = core;
    return {
      async getSummaryShard(machineType, shard) {
        const item = await items.getItem(summaryKeys.summaryShard(machineType, shard));
        return item ? fromSummaryShardItem(item) : null;
      },

      async getSummaryItems(racks, shards, machineIds = []) {
        const found = await items.getItems([
          ...racks.map((r) => summaryKeys.summaryRack(r.machineType, r.rack)),
          ...shards.map((s) => summaryKeys.summaryShard(s.machineType, s.shard)),
          ...[...new Set(machineIds)].map(machineKey),
        ]);
        return {
          racks: found.filter((item) => item.entity === 'summary-rack').map(fromRackAggregateItem),
          shards: found.filter((item) => item.entity === 'summary-shard').map(fromSummaryShardItem),
          machines: new Map(found.filter((item) => item.entity === 'machine').map((item) => [String(item.id), fromMachineItem(item)])),
        };
      },

      /**
       * Every counter item of the catalog's types, by key: types x SUMMARY_SHARDS x COUNTER_ITEMS_PER_SHARD items, whatever
       * the fleet's size; the domain counters only when asked for. A type has counters only once the catalog has it.
       */
      async summaryShards({ nvlinkDomains = false } = {}) {
        const counterItems = Array.from({ length: SUMMARY_SHARDS * COUNTER_ITEMS_PER_SHARD }, (_, shard) => shard);
        const wanted = Object.keys((await readCatalog(core)).types).flatMap((type) => counterItems.map((shard) => summaryKeys.summaryShard(type, shard)));
        const attributes = nvlinkDomains ? undefined : ['machineType', 'shard', 'counters', 'version'];
        const found = await items.getItems(wanted, { attributes });
        return found.map(fromSummaryShardItem).sort((a, b) => (a.machineType === b.machineType ? a.shard - b.shard : a.machineType < b.machineType ? -1 : 1));
      },

      /**
       * A type's racks, or one shard's, by name: the catalog names them, and a page reads the next of them by key, at most
       * RACKS_PER_PAGE (one BatchGetItem), strongly consistent for a shard's recount. A rack the catalog has but no aggregate
       * yet is absent, so a page may come back short; its token names the rack the next page starts at.
       */
      async listRackAggregates(machineType, page) {
        const scope = page.shard === undefined ? `summary-racks:${machineType}` : `summary-racks:${machineType}:${page.shard}`;
        const cursor = decodeSequencePageToken(scope, page.nextToken);
        // Pages end between racks: a token naming a place inside one was not issued here.
        if (cursor !== undefined && cursor.token !== null) throw invalidPageToken('not a token of this listing');
        const racks = typeRacks(await readCatalog(core), machineType).filter((rack) => page.shard === undefined || shardOf(rack) === page.shard);
        const start = cursor === undefined ? 0 : racks.findIndex((rack) => rack >= cursor.partition);
        const from = start < 0 ? racks.length : start;
        const wanted = racks.slice(from, from + Math.min(page.limit, RACKS_PER_PAGE));
        const next = racks[from + wanted.length];
        const read = await items.getItems(
          wanted.map((rack) => summaryKeys.summaryRack(machineType, rack)),
          { consistent: page.shard !== undefined },
        );
        const byRack = new Map(read.map(fromRackAggregateItem).map((aggregate) => [aggregate.rack, aggregate]));
        return {
          items: wanted.flatMap((rack) => byRack.get(rack) ?? []),
          nextToken: encodeSequencePageToken(scope, next === undefined ? undefined : { partition: next, token: null }),
        };
      },
    };
  },
};
