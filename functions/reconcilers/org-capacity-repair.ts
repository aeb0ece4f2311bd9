import { ORG_CAPACITY_SHARDS, repairedShard, settledForRecount, type CapacityNode } from '#domain/capacity/org-capacity.ts';
import type { AppContext } from '#runtime/context.ts';
import { committedOnce } from '#runtime/retry-on-stale.ts';

/** Node items read per repair: one org shard's, at most this many pages. */
const REPAIR_PAGES = 10;
const REPAIR_PAGE_SIZE = 100;

/**
 * The sweep's drift repair of tenant orgs' capacity counters: each run recounts one org shard from its node items
 * and stores the counters if they differ, guarded by the version it read first. Each run takes the next org shard
 * in turn (by the minute), so every one is recounted within orgs x shards runs, and a run reads a bounded number of
 * items. A shard whose nodes do not fit the budget is left to the stream, and so is one whose counters moved too lately
 * for its index to list the nodes they count (domain/capacity/org-capacity.ts `repairedShard`).
 */
export async function repairOrgCapacityShard(ctx: AppContext): Promise<{ repaired: boolean }> {
  const orgs = await ctx.store.capacityOrgs();
  if (orgs.length === 0) return { repaired: false };
  const turn = Math.floor(ctx.clock.now().getTime() / 60_000) % (orgs.length * ORG_CAPACITY_SHARDS);
  const org = orgs[Math.floor(turn / ORG_CAPACITY_SHARDS)]!;
  const shard = turn % ORG_CAPACITY_SHARDS;
  // Read before the nodes: a node write after it moves the shard's version, and the guard below refuses.
  const before = (await ctx.store.getCapacityItems({ shards: [{ org, shard }] })).shards[0] ?? null;
  if (!settledForRecount(before, ctx.clock.now())) return { repaired: false };
  const nodes: CapacityNode[] = [];
  let nextToken: string | undefined;
  for (let pages = 0; pages < REPAIR_PAGES; pages++) {
    const page = await ctx.store.listCapacityNodes(org, { limit: REPAIR_PAGE_SIZE, nextToken, shard });
    nodes.push(...page.items);
    nextToken = page.nextToken;
    if (!nextToken) break;
  }
  if (nextToken) return { repaired: false };
  const after = repairedShard(org, shard, before, nodes, ctx.clock.now());
  if (!after) return { repaired: false };
  const repaired = await committedOnce(() => ctx.store.commit({ orgCapacity: { nodes: [], shards: [{ before, after }] }, history: [] }));
  if (repaired) ctx.log.warn('org capacity counters repaired', { org, shard });
  return { repaired };
}
