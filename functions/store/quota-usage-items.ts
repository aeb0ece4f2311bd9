import type { QuotaUsage } from '#domain/reservations/quotas.ts';
import type { Item } from '#store/item-store.ts';

/** One type's shards between these sort keys (shard 0's and the shards after it): one Query of the org's partition. */
export const quotaShardRange = (machineType: string): [string, string] => [`TYPE#${machineType}`, `TYPE#${machineType}#~`];

/**
 * Each type's usage from its shards' items: the count summed, the quota from shard 0 (`quotaTotal` once dealt over
 * the shards; before that, shard 0's own `quota`, which holds it whole).
 */
export function quotaUsagesOf(items: Item[], shardable: boolean): QuotaUsage[] {
  const byType = new Map<string, Item[]>();
  for (const item of items) byType.set(String(item.machineType), [...(byType.get(String(item.machineType)) ?? []), item]);
  return [...byType].map(([machineType, shards]) => {
    const head = shards.find((item) => item.shard === undefined);
    const quota = typeof head?.quotaTotal === 'number' ? head.quotaTotal : typeof head?.quota === 'number' ? head.quota : undefined;
    return {
      org: String(shards[0]!.org),
      machineType,
      used: shards.reduce((sum, item) => sum + Number(item.used ?? 0), 0),
      ...(quota === undefined ? {} : { quota }),
      shards: shards.map((item) => ({
        shard: Number(item.shard ?? 0),
        used: Number(item.used ?? 0),
        ...(typeof item.quota === 'number' ? { cap: item.quota } : {}),
      })),
      shardable,
    };
  });
}
