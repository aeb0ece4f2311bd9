import { auditEntry, auditTargets, type Requester } from '#domain/events/audit.ts';
import type { Tenant } from '#domain/core/model.ts';
import { quotaSetting } from '#domain/reservations/quota-shards.ts';
import { iso } from '#domain/core/time.ts';
import type { AppContext } from '#runtime/context.ts';
import { retryOnStale } from '#runtime/retry-on-stale.ts';

export interface TenantSettings {
  capabilities?: Tenant['capabilities'] | undefined;
  quotas?: Record<string, number> | undefined;
}

/**
 * Set a tenant org's capabilities, its quotas, or both; what is not given stays. Quotas are also written onto the
 * org's usage items (domain/reservations/quotas.ts), which creates are guarded by, in the same transaction as the tenant and the
 * audit entry of each part set.
 */
export async function setTenant(ctx: AppContext, org: string, settings: TenantSettings, by: Requester): Promise<Tenant> {
  return retryOnStale(async () => {
    const before = await ctx.store.getTenant(org);
    const now = ctx.clock.now();
    const capabilities = settings.capabilities ?? before?.capabilities ?? { targetedInstanceCreation: false };
    const quotas = settings.quotas ?? before?.quotas ?? {};
    const after: Tenant = { org, capabilities, ...(Object.keys(quotas).length > 0 ? { quotas } : {}), updatedAt: iso(now), version: before?.version ?? 0 };
    const audit = auditEntry(
      by,
      now,
      settings.quotas ? 'tenant-quotas-set' : 'tenant-capabilities-set',
      auditTargets.tenant(org),
      auditedChange(before, after, settings),
    );
    // Only the types whose quota changes are dealt, each over its usage shards as they count now.
    const types = new Set([...Object.keys(before?.quotas ?? {}), ...Object.keys(quotas)]);
    const changed = [...types].filter((type) => settings.quotas && before?.quotas?.[type] !== quotas[type]);
    const usage = await Promise.all(changed.map((machineType) => ctx.store.getQuotaUsage(org, machineType, { fresh: true })));
    const quotaWrites = usage.map((u) => quotaSetting(u, quotas[u.machineType] ?? null));
    await ctx.store.commit({ tenants: [{ before, after }], history: [], audit, ...(quotaWrites.length > 0 ? { quotas: quotaWrites } : {}) });
    ctx.log.info(settings.quotas ? 'tenant quotas set' : 'tenant capabilities set', { org, capabilities, quotas, actor: by.actor, requestId: by.requestId });
    return { ...after, version: (before?.version ?? -1) + 1 };
  });
}

/** What the audit entry shows: the capabilities alone, the quotas alone, or both when both were set. */
function auditedChange(before: Tenant | null, after: Tenant, settings: TenantSettings): { before: unknown; after: unknown } {
  if (!settings.quotas) return { before: before?.capabilities, after: after.capabilities };
  if (!settings.capabilities) return { before: before?.quotas ?? {}, after: after.quotas ?? {} };
  return {
    before: before && { capabilities: before.capabilities, quotas: before.quotas ?? {} },
    after: { capabilities: after.capabilities, quotas: after.quotas ?? {} },
  };
}

/**
 * The org's settings and what its instances hold of each type now: the tenant and its usage items, two reads. An org
 * nobody set anything for has the defaults: no capability, no quota.
 */
export async function showTenant(ctx: AppContext, org: string): Promise<Tenant & { usage: Record<string, number> }> {
  const [tenant, usage] = await Promise.all([ctx.store.getTenant(org), ctx.store.listQuotaUsage(org)]);
  const base: Tenant = tenant ?? { org, capabilities: { targetedInstanceCreation: false }, updatedAt: iso(ctx.clock.now()), version: 0 };
  return { ...base, quotas: base.quotas ?? {}, usage: Object.fromEntries(usage.map((u) => [u.machineType, u.used])) };
}
