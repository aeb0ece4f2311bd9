import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import type { QuotaUsage } from '#domain/reservations/quotas.ts';
import type { Item, ItemWrite, TableKey } from '#store/item-access.ts';

// An org's usage shards and quotas (domain/reservations/quota-shards.ts), all in the org's partition: one Query reads
// an org's, or one type's. A decision moves a shard without reading it: an update in place in DynamoDB
// (usageUpdateOf), the same rule in memory (usageAfter).

export const quotaPartition = (org: string): string => `QUOTA#${org}`;

export const quotaUsageKeys = {
  /** Shard 0 keeps the key of the one counter releases before 0.3.0 wrote. */
  quotaUsage: (org: string, machineType: string, shard = 0) => ({ pk: quotaPartition(org), sk: `TYPE#${machineType}${shard === 0 ? '' : `#${shard}`}` }),
};

/** One type's shards lie between these sort keys (shard 0's and those after it). */
export const quotaShardRange = (machineType: string): [string, string] => [`TYPE#${machineType}`, `TYPE#${machineType}#~`];

/**
 * An (org, type)'s usage shard moved by `by` without reading it, or its cap set (a number) or lifted (null), with
 * shard 0's `quotaTotal` beside it. `guard` is the cap an increment was decided against: null, the shard must have no
 * cap; a number, the shard must still have that cap and room for `by` under it. `expectUsed`: the count the caps were
 * dealt on, which the shard must still hold.
 */
export type UsageWrite = {
  usage: {
    key: TableKey;
    org: string;
    machineType: string;
    shard: number;
    by: number;
    guard?: number | null;
    setQuota?: number | null;
    setTotal?: number | null;
    expectUsed?: number;
  };
};

export const isUsageWrite = (write: ItemWrite): write is UsageWrite => 'usage' in write;

/** The item a usage write leaves, given the item as it is (undefined when there is none yet), or null when its guard fails. */
export function usageAfter(write: UsageWrite['usage'], stored: Item | undefined): Item | null {
  const used = Number(stored?.used ?? 0);
  const quota = typeof stored?.quota === 'number' ? stored.quota : undefined;
  if (write.guard === null && quota !== undefined) return null;
  if (typeof write.guard === 'number' && (quota !== write.guard || used + write.by > write.guard)) return null;
  if (write.expectUsed !== undefined && used !== write.expectUsed) return null;
  const { org, machineType, shard } = write;
  const after: Item = { ...(stored ?? {}), ...write.key, entity: 'quota-usage', org, machineType, ...(shard === 0 ? {} : { shard }), used: used + write.by };
  if (write.setQuota === null) delete after.quota;
  else if (write.setQuota !== undefined) after.quota = write.setQuota;
  if (write.setTotal === null) delete after.quotaTotal;
  else if (write.setTotal !== undefined) after.quotaTotal = write.setTotal;
  return after;
}

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** A usage write as one item of a DynamoDB transaction: the shard moved in place (usageAfter is its rule in memory). */
export function usageUpdateOf(table: string, { usage }: UsageWrite): TransactItem {
  const names: Record<string, string> = { '#entity': 'entity', '#org': 'org', '#type': 'machineType', '#used': 'used' };
  const values: Record<string, unknown> = { ':entity': 'quota-usage', ':org': usage.org, ':type': usage.machineType, ':zero': 0, ':by': usage.by };
  const sets = ['#entity = :entity', '#org = :org', '#type = :type', '#used = if_not_exists(#used, :zero) + :by'];
  const removes: string[] = [];
  const conditions: string[] = [];
  const setOrRemove = (name: string, attribute: string, value: number | null | undefined) => {
    if (value === undefined) return;
    names[name] = attribute;
    if (value === null) {
      removes.push(name);
    } else {
      values[`:${attribute}`] = value;
      sets.push(`${name} = :${attribute}`);
    }
  };
  if (usage.shard !== 0) setOrRemove('#shard', 'shard', usage.shard);
  setOrRemove('#quota', 'quota', usage.setQuota);
  setOrRemove('#total', 'quotaTotal', usage.setTotal);
  if (usage.guard === null) {
    names['#quota'] = 'quota';
    conditions.push('attribute_not_exists(#quota)');
  } else if (usage.guard !== undefined) {
    names['#quota'] = 'quota';
    values[':guard'] = usage.guard;
    values[':most'] = usage.guard - usage.by;
    conditions.push('#quota = :guard AND #used <= :most');
  }
  if (usage.expectUsed !== undefined) {
    values[':expected'] = usage.expectUsed;
    conditions.push(usage.expectUsed === 0 ? '(attribute_not_exists(#used) OR #used = :expected)' : '#used = :expected');
  }
  return {
    Update: {
      TableName: table,
      Key: usage.key,
      UpdateExpression: `SET ${sets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`,
      ...(conditions.length > 0 ? { ConditionExpression: conditions.join(' AND ') } : {}),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
}

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
