import type { CapacityFeedEntry } from '#domain/capacity/capacity-events.ts';
import type { CapacityPoint } from '#domain/capacity/capacity-history.ts';
import type { Instance, Machine } from '#domain/core/model.ts';
import { ORG_CAPACITY_SHARDS, type CapacityNode, type OrgCapacityShard } from '#domain/capacity/org-capacity.ts';
import type { Aggregate } from '#store/aggregate.ts';
import {
  capacityFeedItem,
  capacityHistoryPartition,
  capacityKeys,
  capacityNodeItem,
  capacityPointItem,
  feedSk,
  fromCapacityFeedItem,
  fromCapacityNodeItem,
  fromCapacityPointItem,
  fromOrgCapacityShardItem,
  orgCapacityKinds,
  orgCapacityShardItem,
} from '#store/aggregates/capacity-items.ts';
import { fromInstanceItem, instanceKey } from '#store/aggregates/instance-items.ts';
import { fromMachineItem, machineKey } from '#store/aggregates/machine-items.ts';
import { tableKeyOf, type ItemQuery, type TableKey } from '#store/item-access.ts';
import { allItems, readInOrder } from '#store/item-reads.ts';
import type { Page } from '#store/paging.ts';
import type { PageRequest } from '#store/port.ts';
import { indexes } from '#store/table.ts';

/** What `getCapacityItems` reads: machines, their node items and instances, and orgs' counter shards. */
export interface CapacityItemIds {
  machines?: readonly string[];
  nodes?: readonly string[];
  instances?: readonly string[];
  shards?: ReadonlyArray<{ org: string; shard: number }>;
}

export interface CapacityItems {
  machines: Map<string, Machine>;
  instances: Map<string, Instance>;
  /** By machine id. */
  nodes: Map<string, CapacityNode>;
  shards: OrgCapacityShard[];
}

export interface CapacityStore {
  /** Tenant orgs' capacity (domain/capacity/org-capacity.ts): records of several kinds in one strongly consistent batch read. */
  getCapacityItems(ids: CapacityItemIds): Promise<CapacityItems>;
  /** One org's counter shards: a bounded read, whatever the org holds. */
  orgCapacityShards(org: string): Promise<OrgCapacityShard[]>;
  /** The orgs that have capacity counters. */
  capacityOrgs(): Promise<string[]>;
  /** One org's capacity points (domain/capacity/capacity-history.ts) from `since` on, oldest first. */
  listCapacityPoints(org: string, since: string, page: PageRequest): Promise<Page<CapacityPoint>>;
  /** Which of `orgs` have a capacity point at `at`. */
  orgsWithCapacityPoint(orgs: readonly string[], at: string): Promise<Set<string>>;
  /** An org's delivered machines' node records, ordered by counter shard and machine id (or one shard's); the index may lag. */
  listCapacityNodes(org: string, page: PageRequest & { shard?: number | undefined }): Promise<Page<CapacityNode>>;
  /** The last `seq` of each org's capacity-events feed (0 for one without entries): one strongly consistent Query each. */
  capacityFeedHeads(orgs: readonly string[]): Promise<Map<string, number>>;
  /** Up to `limit` entries of an org's capacity-events feed from `seq` `after + 1` on, in `seq` order: one strongly consistent Query. */
  capacityFeedAfter(org: string, after: number, limit: number): Promise<CapacityFeedEntry[]>;
}

export const capacity: Aggregate<CapacityStore> = {
  writes: (change, to) => {
    for (const pair of change.orgCapacity?.nodes ?? []) to.guarded(pair, capacityNodeItem);
    for (const pair of change.orgCapacity?.shards ?? []) to.guarded(pair, orgCapacityShardItem);
    for (const entry of change.capacityFeed ?? []) to.created(capacityFeedItem(entry));
    for (const point of change.capacityPoints ?? []) to.created(capacityPointItem(point));
  },
  store: ({ items }) => ({
    async getCapacityItems(ids) {
      const wanted = new Map<string, TableKey>();
      const want = (key: TableKey) => wanted.set(tableKeyOf(key), key);
      for (const id of ids.machines ?? []) want(machineKey(id));
      for (const id of ids.nodes ?? []) want(capacityKeys.node(id));
      for (const id of ids.instances ?? []) want(instanceKey(id));
      for (const { org, shard } of ids.shards ?? []) want(capacityKeys.shard(org, shard));
      const found = await items.getItems([...wanted.values()]);
      const of = (entity: string) => found.filter((item) => item.entity === entity);
      return {
        machines: new Map(of('machine').map((item) => [String(item.id), fromMachineItem(item)])),
        instances: new Map(of('instance').map((item) => [String(item.id), fromInstanceItem(item)])),
        nodes: new Map(of('capacity-node').map((item) => [String(item.machineId), fromCapacityNodeItem(item)])),
        shards: of('org-capacity').map(fromOrgCapacityShardItem),
      };
    },

    /** ORG_CAPACITY_SHARDS items by key, whatever the org holds: one BatchGetItem. */
    async orgCapacityShards(org) {
      const shards = Array.from({ length: ORG_CAPACITY_SHARDS }, (_, shard) => capacityKeys.shard(org, shard));
      return (await items.getItems(shards)).map(fromOrgCapacityShardItem).sort((a, b) => a.shard - b.shard);
    },

    async capacityOrgs() {
      const partitions = await Promise.all(orgCapacityKinds.map((partition) => allItems(items, { index: indexes.byKind, partition, entriesOnly: true })));
      const entries = partitions.flat();
      return [...new Set(entries.map((item) => String(item.kindSk).split('#')[0]!))].sort();
    },

    /** One org's points from `since` on, oldest first, a page at a time: one Query a page. */
    async listCapacityPoints(org, since, page) {
      const query: ItemQuery = { partition: capacityHistoryPartition(org), sort: { atLeast: since }, limit: page.limit };
      const result = await items.queryItems(query, page.nextToken);
      return { items: result.items.map(fromCapacityPointItem), nextToken: result.nextToken };
    },

    /** The orgs among `orgs` that have a point at `at`: one batch read. */
    async orgsWithCapacityPoint(orgs, at) {
      const found = await items.getItems(orgs.map((org) => ({ pk: capacityHistoryPartition(org), sk: at })));
      return new Set(found.map((item) => String(item.org)));
    },

    /** A shard's nodes, or every shard's one after another (shard, then machine id): a Query a partition. */
    async listCapacityNodes(org, page) {
      const shards = page.shard === undefined ? Array.from({ length: ORG_CAPACITY_SHARDS }, (_, shard) => shard) : [page.shard];
      const queries = shards.map((shard): ItemQuery => ({ index: indexes.byOrg, partition: capacityKeys.nodesOfShard(org, shard) }));
      const result = await readInOrder(items, `capacity-nodes:${org}`, queries, page);
      return { items: result.items.map(fromCapacityNodeItem), nextToken: result.nextToken };
    },

    async capacityFeedHeads(orgs) {
      const heads = await Promise.all(
        [...new Set(orgs)].map(async (org) => {
          const last = await items.queryItems({ partition: capacityKeys.feedOf(org), descending: true, limit: 1, consistent: true });
          return [org, last.items[0] ? Number(last.items[0].seq) : 0] as const;
        }),
      );
      return new Map(heads);
    },

    async capacityFeedAfter(org, after, limit) {
      const page = await items.queryItems({ partition: capacityKeys.feedOf(org), sort: { atLeast: feedSk(after + 1) }, limit, consistent: true });
      return page.items.map(fromCapacityFeedItem);
    },
  }),
};
