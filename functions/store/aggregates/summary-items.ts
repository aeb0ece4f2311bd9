import type { RackAggregate, SummaryShard } from '#domain/machines/fleet-summary.ts';
import type { Item } from '#store/item-access.ts';
import { shardKey, strip } from '#store/item-codec.ts';

// The fleet summary's aggregates (domain/machines/fleet-summary.ts), kept by the stream from the machines.

export const summaryKeys = {
  /**
   * One type's rack, a partition key of its own: a fleet-wide change rewrites every rack, and a key per rack keeps each
   * key's writes at its own machines' pace however many racks the fleet has. Read by key, the catalog naming a type's
   * racks: the rack map pages through them by name, the sweep's recount reads a shard's.
   */
  summaryRack: (machineType: string, rack: string) => ({ pk: `SUMMARY-RACK#${machineType}#${rack}`, sk: '#SUMMARY-RACK' }),
  /**
   * Each counter item its own partition: a fleet-wide change rewrites every counter item of a type, and one shared
   * key would take all of those writes. They are read by key (the catalog names the types): one batch read.
   */
  summaryShard: (machineType: string, shard: number) => ({ pk: `SUMMARY#${machineType}#${shardKey(shard)}`, sk: '#SUMMARY' }),
};

export function rackAggregateItem(rack: RackAggregate): Item {
  return { ...summaryKeys.summaryRack(rack.machineType, rack.rack), entity: 'summary-rack', ...rack };
}

export function summaryShardItem(shard: SummaryShard): Item {
  return { ...summaryKeys.summaryShard(shard.machineType, shard.shard), entity: 'summary-shard', ...shard };
}

export const fromRackAggregateItem = (item: Item): RackAggregate => strip<RackAggregate>(item);
export const fromSummaryShardItem = (item: Item): SummaryShard => strip<SummaryShard>(item);
