import { needsRebalance, quotaSetting } from '#domain/reservations/quota-shards.ts';
import type { QuotaUsage } from '#domain/reservations/quotas.ts';
import type { AppContext } from '#runtime/context.ts';
import { StaleWriteError } from '#store/port.ts';

/**
 * An (org, type)'s usage as creates are decided on it: when its shards' caps leave less room than its quota does (after
 * releases from shards that were over their cap), the quota is dealt over them again first. A rival that moved a count
 * meanwhile makes the deal fail; the usage is read again either way, so the caller decides on what is stored.
 */
export async function loadQuotaUsage(ctx: AppContext, org: string, machineType: string): Promise<QuotaUsage | null> {
  const usage = await ctx.store.getQuotaUsage(org, machineType);
  if (!usage || !needsRebalance(usage)) return usage;
  try {
    await ctx.store.commit({ quotas: [quotaSetting(usage, usage.quota!)], history: [] });
    ctx.log.info('quota dealt again over its usage shards', { org, machineType, quota: usage.quota, used: usage.used });
  } catch (error) {
    if (!(error instanceof StaleWriteError)) throw error;
  }
  return ctx.store.getQuotaUsage(org, machineType);
}
