import type { CapacityFeedEntry } from '#domain/capacity/capacity-events.ts';
import { capacityPointExpiry, type CapacityPoint } from '#domain/capacity/capacity-history.ts';
import type { CapacityNode, OrgCapacityShard } from '#domain/capacity/org-capacity.ts';
import { capacityShardOf } from '#domain/capacity/org-capacity.ts';
import { keyHash } from '#store/key-hash.ts';
import type { Item } from '#store/item-access.ts';
import { shardKey } from '#store/item-codec.ts';

// Keys and item shapes of a tenant org's capacity (domain/capacity/org-capacity.ts). A machine's node item stays at one key
// whichever org has it; while an org has it, it is in the byOrg index under that org and its counter shard, ordered by
// machine id: a shard's recount is one Query, the org's node listing reads the shards' partitions one after another,
// and a large org's node changes spread over its shards' keys instead of taking one. An org's counter shards, a
// partition each, are read by key (one batch read), and are in byKind under ORG-CAPACITY#<nn>, a partition chosen by the org: the sweep's list
// of orgs to recount, read a partition each (orgs that start at once put their items in different partitions). An org's
// capacity-events feed is one partition of the table ordered by `seq` (zero-padded), read strongly consistent.

const ORG_CAPACITY_KIND_PARTITIONS = 16;
export const orgCapacityKinds: readonly string[] = Array.from({ length: ORG_CAPACITY_KIND_PARTITIONS }, (_, n) => `ORG-CAPACITY#${shardKey(n)}`);

/** By the org: its counter items are always listed in the same partition. */
const orgCapacityKindOf = (org: string): string => orgCapacityKinds[keyHash(org) % ORG_CAPACITY_KIND_PARTITIONS]!;

export const capacityKeys = {
  node: (machineId: string) => ({ pk: `CAPACITY-NODE#${machineId}`, sk: '#NODE' }),
  /** A key each: an org's machines changing together move all of its shards, and one partition would take every write. */
  shard: (org: string, shard: number) => ({ pk: `ORG-CAPACITY#${org}#${shardKey(shard)}`, sk: '#SHARD' }),
  nodesOfShard: (org: string, shard: number) => `ORG#${org}#NODE#${shardKey(shard)}`,
  feedOf: (org: string) => `CAPACITY-FEED#${org}`,
  feedEntry: (org: string, seq: number) => ({ pk: capacityKeys.feedOf(org), sk: feedSk(seq) }),
};

/** Sequence numbers sort as strings: 15 digits hold more entries than an org will ever have. */
export const feedSk = (seq: number): string => String(seq).padStart(15, '0');

export function capacityNodeItem(node: CapacityNode): Item {
  const listed = node.entry ? { orgPk: capacityKeys.nodesOfShard(node.entry.org, capacityShardOf(node.machineId)), orgSk: node.machineId } : {};
  return { ...capacityKeys.node(node.machineId), entity: 'capacity-node', ...listed, ...node };
}

export function orgCapacityShardItem(shard: OrgCapacityShard): Item {
  return {
    ...capacityKeys.shard(shard.org, shard.shard),
    entity: 'org-capacity',
    kind: orgCapacityKindOf(shard.org),
    kindSk: `${shard.org}#${shardKey(shard.shard)}`,
    ...shard,
  };
}

export const fromCapacityNodeItem = (item: Item): CapacityNode => ({
  machineId: String(item.machineId),
  entry: (item.entry ?? null) as CapacityNode['entry'],
  ...(item.standing !== undefined ? { standing: item.standing as CapacityNode['standing'] } : {}),
  version: Number(item.version),
});

export const fromOrgCapacityShardItem = (item: Item): OrgCapacityShard => ({
  org: String(item.org),
  shard: Number(item.shard),
  counters: (item.counters ?? {}) as Record<string, number>,
  ...(item.movedAt !== undefined ? { movedAt: String(item.movedAt) } : {}),
  version: Number(item.version),
});

export const capacityFeedItem = (entry: CapacityFeedEntry): Item => ({ ...capacityKeys.feedEntry(entry.org, entry.seq), entity: 'capacity-feed', ...entry });

export const fromCapacityFeedItem = (item: Item): CapacityFeedEntry => ({
  org: String(item.org),
  seq: Number(item.seq),
  id: String(item.id),
  at: String(item.at),
  machineId: String(item.machineId),
  machineType: String(item.machineType),
  change: item.change as CapacityFeedEntry['change'],
  reason: item.reason as CapacityFeedEntry['reason'],
});

/** An org's capacity points: one partition per org, sorted by the point's time, so `since` is a key condition. */
export const capacityHistoryPartition = (org: string): string => `CAPACITY-HISTORY#${org}`;

export function capacityPointItem(point: CapacityPoint): Item {
  return { pk: capacityHistoryPartition(point.org), sk: point.at, entity: 'capacity-point', ...point, expiresAt: capacityPointExpiry(point.at) };
}

export const fromCapacityPointItem = (item: Item): CapacityPoint => ({
  org: String(item.org),
  at: String(item.at),
  byType: (item.byType ?? {}) as CapacityPoint['byType'],
});
