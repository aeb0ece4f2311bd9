import { defaultHistorySince } from '#domain/capacity/capacity-history.ts';
import { capacityPointResponse } from '#domain/capacity/capacity-responses.ts';
import type { AppContext } from '#runtime/context.ts';
import type { PageRequest } from '#store/port.ts';

/** A page of an org's capacity points from `since` on (default: a day back), oldest first: one Query. */
export async function listCapacityHistory(ctx: AppContext, org: string, page: PageRequest & { since?: string | undefined }) {
  const since = page.since ?? defaultHistorySince(ctx.clock.now());
  const points = await ctx.store.listCapacityPoints(org, since, { limit: page.limit, nextToken: page.nextToken });
  return { items: points.items.map((point) => capacityPointResponse.parse(point)), nextToken: points.nextToken };
}
