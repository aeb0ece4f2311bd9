import { capacityPointExpiry, type CapacityPoint } from '#domain/capacity-history.ts';
import type { CapacityNode, OrgCapacityShard } from '#domain/org-capacity.ts';
import { capacityShardOf } from '#domain/org-capacity.ts';

// Keys and item shapes of a tenant org's capacity (domain/org-capacity.ts). A machine's node item stays at one key
// whichever org has it; while an org has it, it is in the byOrg index under that org, ordered by counter shard and
// machine id, so the org's node listing and a shard's recount are each one Query. An org's counter shards are read
// by key (one batch read), and are in byKind under ORG-CAPACITY: the sweep's list of orgs to recount.

type Item = Record<string, unknown>;

export const ORG_CAPACITY_KIND = 'ORG-CAPACITY';

const shardKey = (shard: number): string => String(shard).padStart(2, '0');

export const capacityKeys = {
  node: (machineId: string) => ({ pk: `CAPACITY-NODE#${machineId}`, sk: '#NODE' }),
  shard: (org: string, shard: number) => ({ pk: `ORG-CAPACITY#${org}`, sk: shardKey(shard) }),
  nodesOfOrg: (org: string) => `ORG#${org}#NODE`,
  nodesOfShard: (shard: number) => `${shardKey(shard)}#`,
};

export function capacityNodeItem(node: CapacityNode): Item {
  const listed = node.entry ? { orgPk: capacityKeys.nodesOfOrg(node.entry.org), orgSk: `${shardKey(capacityShardOf(node.machineId))}#${node.machineId}` } : {};
  return { ...capacityKeys.node(node.machineId), entity: 'capacity-node', ...listed, ...node };
}

export function orgCapacityShardItem(shard: OrgCapacityShard): Item {
  return {
    ...capacityKeys.shard(shard.org, shard.shard),
    entity: 'org-capacity',
    kind: ORG_CAPACITY_KIND,
    kindSk: `${shard.org}#${shardKey(shard.shard)}`,
    ...shard,
  };
}

export const fromCapacityNodeItem = (item: Item): CapacityNode => ({
  machineId: String(item.machineId),
  entry: (item.entry ?? null) as CapacityNode['entry'],
  version: Number(item.version),
});

export const fromOrgCapacityShardItem = (item: Item): OrgCapacityShard => ({
  org: String(item.org),
  shard: Number(item.shard),
  counters: (item.counters ?? {}) as Record<string, number>,
  version: Number(item.version),
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
