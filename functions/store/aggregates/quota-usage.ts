import type { QuotaSetting } from '#domain/reservations/quota-shards.ts';
import { usageMoves, usageRef, type QuotaUsage } from '#domain/reservations/quotas.ts';
import type { Aggregate } from '#store/aggregate.ts';
import { quotaPartition, quotaShardRange, quotaUsageKeys, quotaUsagesOf, type UsageWrite } from '#store/aggregates/quota-usage-items.ts';
import { allItems } from '#store/item-reads.ts';

export interface QuotaUsageStore {
  /**
   * An org's usage of a machine type, its quota and its shards (domain/reservations/quota-shards.ts); none counted
   * yet, zero. Strongly consistent, one Query of the type's shards: a create is decided on the counts it is guarded
   * by. `fresh`: whether the table is pinned read now, not as cached, for a quota about to be dealt on it.
   */
  getQuotaUsage(org: string, machineType: string, options?: { fresh?: boolean }): Promise<QuotaUsage>;
  /** Every machine type an org has a usage item for: one Query of the org's partition, strongly consistent. */
  listQuotaUsage(org: string): Promise<QuotaUsage[]>;
}

/** A quota setting's writes: every shard it names, shard 0 with the total once the quota is dealt over the shards. */
function settingWrites({ org, machineType, quota, shards }: QuotaSetting): UsageWrite[] {
  const total = shards.length > 1 ? quota : null;
  return shards.map(({ shard, cap, expectUsed }) => ({
    usage: {
      key: quotaUsageKeys.quotaUsage(org, machineType, shard),
      org,
      machineType,
      shard,
      by: 0,
      setQuota: cap,
      ...(shard === 0 ? { setTotal: total } : {}),
      ...(expectUsed === undefined ? {} : { expectUsed }),
    },
  }));
}

export const quotaUsage: Aggregate<QuotaUsageStore> = {
  writes: (change, to) => {
    const guards = new Map((change.quotaGuards ?? []).map((g) => [usageRef(g.org, g.machineType, g.shard), g.quota]));
    for (const move of usageMoves(change.instances ?? [])) {
      const guard = move.by > 0 ? guards.get(usageRef(move.org, move.machineType, move.shard)) : undefined;
      to.usage({ usage: { key: quotaUsageKeys.quotaUsage(move.org, move.machineType, move.shard), ...move, ...(guard === undefined ? {} : { guard }) } });
    }
    for (const setting of change.quotas ?? []) for (const write of settingWrites(setting)) to.usage(write);
  },
  store: ({ items, layout }) => {
    const getQuotaUsage = async (org: string, machineType: string, options: { fresh?: boolean } = {}): Promise<QuotaUsage> => {
      const [found, shardable] = await Promise.all([
        allItems(items, { partition: quotaPartition(org), sort: { between: quotaShardRange(machineType) }, consistent: true }),
        layout.countersShardable(options.fresh),
      ]);
      return quotaUsagesOf(found, shardable)[0] ?? { org, machineType, used: 0, shards: [], shardable };
    };
    return {
      getQuotaUsage,
      async listQuotaUsage(org) {
        const [found, shardable] = await Promise.all([allItems(items, { partition: quotaPartition(org), consistent: true }), layout.countersShardable()]);
        return quotaUsagesOf(found, shardable);
      },
    };
  },
};
