import { capacityIntervalOf, capacityPoint } from '#domain/capacity/capacity-history.ts';
import { gpusPerMachine } from '#domain/machines/gpu-catalog.ts';
import type { HeartbeatView } from '#domain/core/health.ts';
import { orgCapacity } from '#domain/capacity/org-capacity.ts';
import type { AppContext } from '#runtime/context.ts';
import { committedOnce } from '#runtime/retry-on-stale.ts';

/** Orgs a run takes a point of, at most: the others are taken by the next runs within the same interval. */
export const CAPACITY_POINTS_PER_RUN = 25;

/**
 * The sweep's part of orgs' capacity history: for each org with capacity counters and no point yet in the current
 * interval (`[sweep] capacity_history_seconds`), its capacity as `GET .../capacity` reads it, written as the
 * interval's point only if the interval has none. Overlapping or repeated runs take each point once; a run reads the
 * list of orgs, one batch of their points' keys, and the counters of at most CAPACITY_POINTS_PER_RUN orgs.
 */
export async function takeCapacityPoints(ctx: AppContext, heartbeat: HeartbeatView): Promise<{ taken: number }> {
  const now = ctx.clock.now();
  const at = capacityIntervalOf(now, ctx.config.sweep.capacity_history_seconds);
  const orgs = await ctx.store.capacityOrgs();
  if (orgs.length === 0) return { taken: 0 };
  const taken = await ctx.store.orgsWithCapacityPoint(orgs, at);
  const due = orgs.filter((org) => !taken.has(org)).slice(0, CAPACITY_POINTS_PER_RUN);
  const written = await Promise.all(
    due.map(async (org) => {
      const capacity = orgCapacity(await ctx.store.orgCapacityShards(org), {}, (type) => gpusPerMachine(ctx.config, type), heartbeat, now);
      return committedOnce(() => ctx.store.commit({ capacityPoints: [capacityPoint(org, capacity, at)], history: [] }));
    }),
  );
  return { taken: written.filter(Boolean).length };
}
