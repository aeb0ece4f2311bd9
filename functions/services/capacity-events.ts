import { contiguousAfter } from '#domain/capacity/capacity-events.ts';
import { capacityEventsResponse, type CapacityEventsView } from '#domain/capacity/capacity-feed-schemas.ts';
import { unprocessable } from '#domain/core/rejection.ts';
import type { AppContext } from '#runtime/context.ts';

/**
 * A page of the org's capacity-events feed after the cursor: one strongly consistent Query of the org's feed
 * partition, and a second only when nothing came, to tell a cursor the feed never gave (422 `invalid-cursor`).
 * Entries are numbered without gaps in the order they committed, so a page stops before the first number it did not
 * read: following the cursor never skips or repeats an entry.
 */
export async function readCapacityEvents(ctx: AppContext, org: string, query: { since?: string | undefined; limit: number }): Promise<CapacityEventsView> {
  const after = Number(query.since ?? '0');
  const entries = contiguousAfter(after, await ctx.store.capacityFeedAfter(org, after, query.limit));
  if (entries.length === 0 && after > 0) {
    const head = (await ctx.store.capacityFeedHeads([org])).get(org) ?? 0;
    if (head < after) throw unprocessable('invalid-cursor', `since ${after} is past the last entry of this feed (${head})`);
  }
  return capacityEventsResponse.parse({
    items: entries.map(({ id, at, machineId, machineType, change, reason }) => ({ id, at, machineId, machineType, change, reason })),
    cursor: String(entries.at(-1)?.seq ?? after),
  });
}
