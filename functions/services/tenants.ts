import { auditEntry, auditTargets, type Requester } from '#domain/audit.ts';
import type { Tenant } from '#domain/model.ts';
import { iso } from '#domain/time.ts';
import type { AppContext } from '#runtime/context.ts';
import { retryOnStale } from '#runtime/retry-on-stale.ts';

export async function setTenantCapabilities(ctx: AppContext, org: string, capabilities: Tenant['capabilities'], by: Requester): Promise<Tenant> {
  return retryOnStale(async () => {
    const before = await ctx.store.getTenant(org);
    const now = ctx.clock.now();
    const after: Tenant = { org, capabilities, updatedAt: iso(now), version: before?.version ?? 0 };
    const audit = auditEntry(by, now, 'tenant-capabilities-set', auditTargets.tenant(org), { before: before?.capabilities, after: capabilities });
    await ctx.store.commit({ tenants: [{ before, after }], history: [], audit });
    ctx.log.info('tenant capabilities set', { org, capabilities, actor: by.actor, requestId: by.requestId });
    return { ...after, version: (before?.version ?? -1) + 1 };
  });
}
