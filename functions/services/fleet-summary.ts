import { fleetSummary, type FleetSummary, type RackAggregate } from '#domain/machines/fleet-summary.ts';
import { rackTallies, type RackTallies } from '#domain/machines/rack-tally.ts';
import type { Page } from '#store/paging.ts';
import type { AppContext } from '#runtime/context.ts';
import { loadHeartbeatView } from '#runtime/heartbeat-view.ts';

/**
 * The fleet's counts, from the counter shards: the catalog, one batch read of its types' counter items and the site
 * heartbeat, whatever the fleet's size.
 * The per-domain counters are read only for `nvlinkDomains`.
 */
export async function readFleetSummary(ctx: AppContext, { nvlinkDomains = false } = {}): Promise<FleetSummary> {
  const [shards, heartbeat] = await Promise.all([ctx.store.summaryShards({ nvlinkDomains }), loadHeartbeatView(ctx)]);
  return fleetSummary(shards, heartbeat, ctx.clock.now(), { nvlinkDomains });
}

/**
 * One type's racks with their machines' compact entries and their tallies, a page of racks at a time; no type: the
 * catalog's first.
 */
export async function listRacks(
  ctx: AppContext,
  machineType: string | undefined,
  page: { limit: number; nextToken?: string | undefined },
): Promise<Page<RackAggregate & RackTallies>> {
  const type = machineType ?? Object.keys((await ctx.store.getCatalog()).types).sort()[0];
  if (type === undefined) return { items: [] };
  const [racks, heartbeat] = await Promise.all([ctx.store.listRackAggregates(type, page), loadHeartbeatView(ctx)]);
  const now = ctx.clock.now();
  return { items: racks.items.map((rack) => ({ ...rack, ...rackTallies(rack, heartbeat, now) })), nextToken: racks.nextToken };
}
