import { machinesOfOrg, orgDeadline, requestDeferral, type Maintenance } from '#domain/maintenance/maintenance.ts';
import type { Principal } from '#domain/core/model.ts';
import { notFound, unprocessable } from '#domain/core/rejection.ts';
import { iso } from '#domain/core/time.ts';
import type { AppContext } from '#runtime/context.ts';
import { retryOnStale } from '#runtime/retry-on-stale.ts';
import { releaseInstance } from '#services/instances.ts';
import { requireMaintenance } from '#services/maintenance.ts';

// The tenant's side of declared maintenance: what touches its instances, handing back early, asking for more time.
// A tenant sees only its own machines and its own deferral of a maintenance, never another org's.

/** A maintenance as one org may see it, with the deadline it is held to (a deferral it was granted moved it). */
export function tenantView(maintenance: Maintenance, org: string): Maintenance {
  const own = new Set(machinesOfOrg(maintenance, org));
  return {
    ...maintenance,
    handBackBy: orgDeadline(maintenance, org),
    machines: Object.fromEntries(Object.entries(maintenance.machines).filter(([id]) => own.has(id))),
    deferrals: maintenance.deferrals.filter((d) => d.org === org),
  };
}

const touches = (maintenance: Maintenance, org: string): boolean => machinesOfOrg(maintenance, org).length > 0;

/** The open maintenance touching the org's instances: one read of the site's open list and its records. */
export async function listForOrg(ctx: AppContext, org: string): Promise<Maintenance[]> {
  const open = await ctx.store.getOpenMaintenances();
  if (!open || open.ids.length === 0) return [];
  const records = [...(await ctx.store.getMaintenances(open.ids)).values()];
  return records
    .filter((m) => touches(m, org))
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt))
    .map((m) => tenantView(m, org));
}

async function requireOrgMaintenance(ctx: AppContext, org: string, id: string): Promise<Maintenance> {
  const maintenance = await requireMaintenance(ctx, id);
  if (!touches(maintenance, org)) throw notFound(`maintenance ${id}`);
  return maintenance;
}

export const showForOrg = async (ctx: AppContext, org: string, id: string): Promise<Maintenance> => tenantView(await requireOrgMaintenance(ctx, org, id), org);

/** A tenant asks for more time; the provider decides (services/maintenance.ts `decideOrgDeferral`). */
export async function askForDeferral(ctx: AppContext, principal: Principal, id: string, until: string, reason: string): Promise<Maintenance> {
  return retryOnStale(async () => {
    const maintenance = await requireOrgMaintenance(ctx, principal.org, id);
    const now = ctx.clock.now();
    const after = requestDeferral(maintenance, principal.org, until, reason, now);
    const entry = {
      machineId: id,
      at: iso(now),
      actor: principal.sub,
      action: 'maintenance-deferral-requested',
      message: `${principal.org} asks until ${until}`,
    };
    await ctx.store.commit({ maintenances: [{ before: maintenance, after }], history: [entry] });
    return tenantView(after, principal.org);
  });
}

/**
 * Hands instances back early: each is released as the release route would (its machine then goes into maintenance
 * after cleanup, not back to the pool). Every instance must be the org's and held in this maintenance.
 */
export async function handBack(ctx: AppContext, principal: Principal, id: string, instanceIds: string[]): Promise<{ handedBack: string[] }> {
  const maintenance = await requireOrgMaintenance(ctx, principal.org, id);
  const held = new Set(
    Object.values(maintenance.machines)
      .filter((m) => m.org === principal.org && m.phase === 'held')
      .map((m) => m.instanceId),
  );
  const foreign = instanceIds.filter((instanceId) => !held.has(instanceId));
  if (foreign.length > 0) throw unprocessable('not-held', `not held in maintenance ${id}: ${foreign.join(', ')}`);
  for (const instanceId of new Set(instanceIds)) await releaseInstance(ctx, principal, instanceId);
  return { handedBack: [...new Set(instanceIds)] };
}
