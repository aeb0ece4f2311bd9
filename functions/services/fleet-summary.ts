import { fleetSummary, type FleetSummary, type RackAggregate } from '#domain/fleet-summary.ts';
import type { Page } from '#store/paging.ts';
import type { AppContext } from '#runtime/context.ts';
import { loadHeartbeatView } from '#runtime/heartbeat-view.ts';

/** The fleet's counts, from the counter shards: one bounded Query and the site heartbeat, whatever the fleet's size. */
export async function readFleetSummary(ctx: AppContext): Promise<FleetSummary> {
  const [shards, heartbeat] = await Promise.all([ctx.store.summaryShards(), loadHeartbeatView(ctx)]);
  return fleetSummary(shards, heartbeat, ctx.clock.now());
}

/** One type's racks with their machines' compact entries, a page of racks at a time; no type: the catalog's first. */
export async function listRacks(
  ctx: AppContext,
  machineType: string | undefined,
  page: { limit: number; nextToken?: string | undefined },
): Promise<Page<RackAggregate>> {
  const type = machineType ?? Object.keys((await ctx.store.getCatalog()).types).sort()[0];
  return type === undefined ? { items: [] } : ctx.store.listRackAggregates(type, page);
}
