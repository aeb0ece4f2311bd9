import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { usageMoves, usageRef, type QuotaUsage } from '#domain/quotas.ts';
import type { Aggregate } from '#store/aggregate.ts';
import type { Item, ItemWrite, TableKey } from '#store/item-access.ts';
import { allItems } from '#store/item-reads.ts';

// An org's usage counters and quotas (domain/quotas.ts), one item per machine type, all in the org's partition: one
// Query reads them. A decision moves a counter without reading it: an update in place in DynamoDB (usageUpdateOf),
// the same rule in memory (usageAfter).

export const quotaPartition = (org: string): string => `QUOTA#${org}`;

export const quotaUsageKeys = {
  quotaUsage: (org: string, machineType: string) => ({ pk: quotaPartition(org), sk: `TYPE#${machineType}` }),
};

/**
 * An (org, type)'s usage counter moved by `by` without reading it (domain/quotas.ts), or its quota set (a number) or
 * lifted (null). `guard` is the quota an increment was decided against: null, the item must have no quota; a
 * number, the item must still have that quota and room for `by` under it.
 */
export type UsageWrite = { usage: { key: TableKey; org: string; machineType: string; by: number; guard?: number | null; setQuota?: number | null } };

export const isUsageWrite = (write: ItemWrite): write is UsageWrite => 'usage' in write;

/** The item a usage write leaves, given the item as it is (undefined when there is none yet), or null when its guard fails. */
export function usageAfter(write: UsageWrite['usage'], stored: Item | undefined): Item | null {
  const used = Number(stored?.used ?? 0);
  const quota = typeof stored?.quota === 'number' ? stored.quota : undefined;
  if (write.guard === null && quota !== undefined) return null;
  if (typeof write.guard === 'number' && (quota !== write.guard || used + write.by > write.guard)) return null;
  const after: Item = { ...(stored ?? {}), ...write.key, entity: 'quota-usage', org: write.org, machineType: write.machineType, used: used + write.by };
  if (write.setQuota === null) delete after.quota;
  else if (write.setQuota !== undefined) after.quota = write.setQuota;
  return after;
}

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** A usage write as one item of a DynamoDB transaction: the counter moved in place (usageAfter is its rule in memory). */
export function usageUpdateOf(table: string, { usage }: UsageWrite): TransactItem {
  const quotaSet = usage.setQuota === undefined ? '' : usage.setQuota === null ? ' REMOVE #quota' : ', #quota = :quota';
  const guard = usage.guard === undefined ? undefined : usage.guard === null ? 'attribute_not_exists(#quota)' : '#quota = :guard AND #used <= :most';
  return {
    Update: {
      TableName: table,
      Key: usage.key,
      UpdateExpression: `SET #entity = :entity, #org = :org, #type = :type, #used = if_not_exists(#used, :zero) + :by${quotaSet}`,
      ...(guard ? { ConditionExpression: guard } : {}),
      ExpressionAttributeNames: {
        '#entity': 'entity',
        '#org': 'org',
        '#type': 'machineType',
        '#used': 'used',
        ...(usage.setQuota !== undefined || usage.guard !== undefined ? { '#quota': 'quota' } : {}),
      },
      ExpressionAttributeValues: {
        ':entity': 'quota-usage',
        ':org': usage.org,
        ':type': usage.machineType,
        ':zero': 0,
        ':by': usage.by,
        ...(typeof usage.setQuota === 'number' ? { ':quota': usage.setQuota } : {}),
        ...(typeof usage.guard === 'number' ? { ':guard': usage.guard, ':most': usage.guard - usage.by } : {}),
      },
    },
  };
}

export const fromQuotaUsageItem = (item: Item): QuotaUsage => ({
  org: String(item.org),
  machineType: String(item.machineType),
  used: Number(item.used ?? 0),
  ...(typeof item.quota === 'number' ? { quota: item.quota } : {}),
});

export interface QuotaUsageStore {
  /** An org's usage of a machine type and its quota (domain/quotas.ts); null when nothing was ever counted or set. */
  getQuotaUsage(org: string, machineType: string): Promise<QuotaUsage | null>;
  /** Every machine type an org has a usage item for: one Query of the org's partition. */
  listQuotaUsage(org: string): Promise<QuotaUsage[]>;
}

export const quotaUsage: Aggregate<QuotaUsageStore> = {
  writes: (change, to) => {
    const guards = new Map((change.quotaGuards ?? []).map((g) => [usageRef(g.org, g.machineType), g.quota]));
    for (const move of usageMoves(change.instances ?? [])) {
      const guard = move.by > 0 ? guards.get(usageRef(move.org, move.machineType)) : undefined;
      to.usage({ usage: { key: quotaUsageKeys.quotaUsage(move.org, move.machineType), ...move, ...(guard === undefined ? {} : { guard }) } });
    }
    for (const { org, machineType, quota } of change.quotas ?? []) {
      to.usage({ usage: { key: quotaUsageKeys.quotaUsage(org, machineType), org, machineType, by: 0, setQuota: quota } });
    }
  },
  store: ({ items }) => ({
    async getQuotaUsage(org, machineType) {
      const item = await items.getItem(quotaUsageKeys.quotaUsage(org, machineType));
      return item ? fromQuotaUsageItem(item) : null;
    },
    /** Strongly consistent: the usage shown is the one the org's creates are guarded by, not a moment old. */
    async listQuotaUsage(org) {
      return (await allItems(items, { partition: quotaPartition(org), consistent: true })).map(fromQuotaUsageItem);
    },
  }),
};
