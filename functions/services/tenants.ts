import type { Tenant } from '#domain/model.ts';
import { iso } from '#domain/time.ts';
import type { AppContext } from './context.ts';
import { retryOnStale } from './retry-on-stale.ts';

export async function setTenantCapabilities(ctx: AppContext, org: string, capabilities: Tenant['capabilities'], actor: string): Promise<Tenant> {
  return retryOnStale(async () => {
    const before = await ctx.store.getTenant(org);
    const after: Tenant = { org, capabilities, updatedAt: iso(ctx.clock.now()), version: before?.version ?? 0 };
    await ctx.store.commit({ tenants: [{ before, after }], history: [] });
    ctx.log.info('tenant capabilities set', { org, capabilities, actor });
    return { ...after, version: (before?.version ?? -1) + 1 };
  });
}
