import { applyDelta, counterItemsOfShard, countersByItem, SUMMARY_SHARDS, type RackAggregate, type SummaryShard } from '#domain/machines/fleet-summary.ts';
import type { AppContext } from '#runtime/context.ts';
import { committedOnce } from '#runtime/retry-on-stale.ts';

/** Rack items read per repair: one shard's racks of one type, at most this many pages. */
const REPAIR_PAGES = 4;
const REPAIR_PAGE_SIZE = 100;

/**
 * The sweep's drift repair: recount one shard's counter items from its rack items and store those that differ, in
 * one transaction. Each run takes the next shard in turn (by the minute), so every shard is recounted within types x
 * shards runs and a run reads a bounded number of items. A shard whose racks do not fit the budget is left to the
 * stream.
 */
export async function repairSummaryShard(ctx: AppContext, shards?: SummaryShard[]): Promise<{ repaired: boolean }> {
  // The shards only tell which types there are; the shard to recount is read afresh below.
  const types = [...new Set((shards ?? (await ctx.store.summaryShards())).map((s) => s.machineType))].sort();
  if (types.length === 0) return { repaired: false };
  const turn = Math.floor(ctx.clock.now().getTime() / 60_000) % (types.length * SUMMARY_SHARDS);
  const machineType = types[Math.floor(turn / SUMMARY_SHARDS)]!;
  const shard = turn % SUMMARY_SHARDS;
  const items = counterItemsOfShard(shard);
  // Read before the racks, strongly: a rack write after it moves an item's version, and the guard below refuses.
  const stored = new Map(
    (
      await ctx.store.getSummaryItems(
        [],
        items.map((item) => ({ machineType, shard: item })),
      )
    ).shards.map((s) => [s.shard, s]),
  );
  const racks: RackAggregate[] = [];
  let nextToken: string | undefined;
  for (let pages = 0; pages < REPAIR_PAGES; pages++) {
    const page = await ctx.store.listRackAggregates(machineType, { limit: REPAIR_PAGE_SIZE, nextToken, shard });
    racks.push(...page.items);
    nextToken = page.nextToken;
    if (!nextToken) break;
  }
  if (nextToken) return { repaired: false };
  const counted = countersByItem(racks);
  const drifted = items.flatMap((item) => {
    const before = stored.get(item) ?? null;
    const recounted = counted.get(item) ?? { counters: {} };
    const same = sameCounters(before?.counters ?? {}, recounted.counters) && sameCounters(before?.domainCounters ?? {}, recounted.domainCounters ?? {});
    return same ? [] : [{ before, after: { machineType, shard: item, ...recounted, version: before?.version ?? 0 } satisfies SummaryShard }];
  });
  if (drifted.length === 0) return { repaired: false };
  // A stream write in between makes this one lose: the next turn of this shard recounts again.
  const repaired = await committedOnce(() => ctx.store.commit({ fleetSummary: { racks: [], shards: drifted }, history: [] }));
  if (repaired) ctx.log.warn('fleet summary counters repaired', { machineType, shard, items: drifted.map((d) => d.after.shard) });
  return { repaired };
}

const sameCounters = (a: Record<string, number>, b: Record<string, number>): boolean =>
  Object.keys(applyDelta(a, Object.fromEntries(Object.entries(b).map(([k, v]) => [k, -v])))).length === 0;
