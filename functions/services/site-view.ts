import { rackPicker, type Catalog, type RackPicker } from '#domain/machines/catalog.ts';
import type { HeartbeatView } from '#domain/core/health.ts';
import type { AppContext } from '#runtime/context.ts';
import { heartbeatViewOf } from '#runtime/heartbeat-view.ts';

/** What a create needs of the site besides its machines: which types exist, and when the agent's roster was seen. */
export interface SiteView {
  catalog: Catalog;
  heartbeat: HeartbeatView;
  /** A rack of the type at random, in proportion to its machines (domain/machines/catalog.ts rackPicker). */
  randomRack(machineType: string): string | undefined;
  /**
   * Whether a create under this view found the org's reserved machines of the type all taken (or none reserved): its
   * other creates then go straight to the shared pool for the view's life, instead of each reading the org's pool first.
   */
  reservedPoolEmpty(machineType: string, org: string): boolean;
  noteReservedPoolEmpty(machineType: string, org: string): void;
  /** Read by an earlier request: a refusal decided on it must be confirmed on a fresh read. */
  cached: boolean;
}

/**
 * How long one container reuses a site view. A burst of creates then reads the allocatable index only, not two
 * site records each. Both only grow stale in the safe direction: a type registered since is confirmed afresh before
 * a 422, and an older roster time only makes machines look staler (a no-capacity answer is confirmed afresh too).
 */
export const SITE_VIEW_TTL_MS = 2_000;

// By the site's config: one per container (the store is wrapped anew for every request).
const views = new WeakMap<AppContext['config'], { readAt: number; view: Promise<Omit<SiteView, 'cached'>> }>();

export async function siteView(ctx: AppContext, { fresh = false } = {}): Promise<SiteView> {
  const now = ctx.clock.now().getTime();
  const kept = views.get(ctx.config);
  if (!fresh && kept && now - kept.readAt < SITE_VIEW_TTL_MS) return { ...(await kept.view), cached: true };
  // The catalog and the roster time in one read.
  const view = ctx.store
    .getRecords({ catalog: true, siteHeartbeat: true })
    .then((read) => viewOf(read.catalog!, heartbeatViewOf(ctx, read.siteHeartbeat ?? null)));
  views.set(ctx.config, { readAt: now, view });
  view.catch(() => views.get(ctx.config)?.view === view && views.delete(ctx.config));
  return { ...(await view), cached: false };
}

/** The view of one read; a type's rack picker is built at its first create, then kept with the view. */
function viewOf(catalog: Catalog, heartbeat: HeartbeatView): Omit<SiteView, 'cached'> {
  const pickers = new Map<string, RackPicker>();
  const randomRack = (machineType: string) => {
    let pick = pickers.get(machineType);
    if (!pick) {
      pick = rackPicker(catalog.types[machineType]?.racks ?? {});
      pickers.set(machineType, pick);
    }
    return pick();
  };
  const emptyPools = new Set<string>();
  const poolKey = (machineType: string, org: string) => JSON.stringify([machineType, org]);
  return {
    catalog,
    heartbeat,
    randomRack,
    reservedPoolEmpty: (machineType, org) => emptyPools.has(poolKey(machineType, org)),
    noteReservedPoolEmpty: (machineType, org) => void emptyPools.add(poolKey(machineType, org)),
  };
}
