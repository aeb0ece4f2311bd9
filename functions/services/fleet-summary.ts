import { applyDelta, countersOf, fleetSummary, SUMMARY_SHARDS, type FleetSummary, type RackAggregate, type SummaryShard } from '#domain/fleet-summary.ts';
import type { Page } from '#store/paging.ts';
import type { AppContext } from './context.ts';
import { loadHeartbeatView } from './heartbeat-view.ts';
import { committedOnce } from './retry-on-stale.ts';

/** The fleet's counts, from the counter shards: one bounded Query and the site heartbeat, whatever the fleet's size. */
export async function readFleetSummary(ctx: AppContext): Promise<FleetSummary> {
  const [shards, heartbeat] = await Promise.all([ctx.store.summaryShards(), loadHeartbeatView(ctx)]);
  return fleetSummary(shards, heartbeat, ctx.clock.now());
}

/** One type's racks with their machines' compact entries, a page of racks at a time; no type: the catalog's first. */
export async function listRacks(ctx: AppContext, machineType: string | undefined, page: { limit: number; nextToken?: string | undefined }): Promise<Page<RackAggregate>> {
  const type = machineType ?? Object.keys((await ctx.store.getCatalog()).types).sort()[0];
  return type === undefined ? { items: [] } : ctx.store.listRackAggregates(type, page);
}

/** Rack items read per repair: one shard's racks of one type, at most this many pages. */
const REPAIR_PAGES = 4;
const REPAIR_PAGE_SIZE = 100;

/**
 * The sweep's drift repair: recount one counter shard from its rack items and store the counts if they differ.
 * Each run takes the next shard in turn (by the minute), so every shard is recounted within types x shards runs and
 * a run reads a bounded number of items. A shard whose racks do not fit the budget is left to the stream.
 */
export async function repairSummaryShard(ctx: AppContext): Promise<{ repaired: boolean }> {
  const shards = await ctx.store.summaryShards();
  const types = [...new Set(shards.map((s) => s.machineType))].sort();
  if (types.length === 0) return { repaired: false };
  const turn = Math.floor(ctx.clock.now().getTime() / 60_000) % (types.length * SUMMARY_SHARDS);
  const machineType = types[Math.floor(turn / SUMMARY_SHARDS)]!;
  const shard = turn % SUMMARY_SHARDS;
  // Read before the racks, strongly: a rack write after it moves the shard's version, and the guard below refuses.
  const stored = await ctx.store.getSummaryShard(machineType, shard);
  const racks: RackAggregate[] = [];
  let nextToken: string | undefined;
  for (let pages = 0; pages < REPAIR_PAGES; pages++) {
    const page = await ctx.store.listRackAggregates(machineType, { limit: REPAIR_PAGE_SIZE, nextToken, shard });
    racks.push(...page.items);
    nextToken = page.nextToken;
    if (!nextToken) break;
  }
  if (nextToken) return { repaired: false };
  const counters = countersOf(racks);
  if (sameCounters(stored?.counters ?? {}, counters)) return { repaired: false };
  const after: SummaryShard = { machineType, shard, counters, version: stored?.version ?? 0 };
  // A stream write in between makes this one lose: the next turn of this shard recounts again.
  const repaired = await committedOnce(() => ctx.store.commit({ fleetSummary: { racks: [], shards: [{ before: stored, after }] }, history: [] }));
  if (repaired) ctx.log.warn('fleet summary counters repaired', { machineType, shard });
  return { repaired };
}

const sameCounters = (a: Record<string, number>, b: Record<string, number>): boolean => Object.keys(applyDelta(a, Object.fromEntries(Object.entries(b).map(([k, v]) => [k, -v])))).length === 0;
