import { bucketWithRoster, planHeartbeat, rosterDigest, type RosterDigests } from '#domain/heartbeat.ts';
import { iso } from '#domain/time.ts';
import { heartbeatTimeoutMs, type AppContext } from './context.ts';
import { committedOnce } from './retry-on-stale.ts';

/**
 * The site agent's beat with its whole roster: two small reads, and when something changed, one transaction with
 * the buckets whose ids changed (and their digests), plus the roster time every timeout/3. Never a read or write per
 * machine: the roster-bucket reconciler applies a changed bucket to its machines from the stream.
 */
export async function receiveHeartbeat(ctx: AppContext, machineIds: string[]): Promise<{ stored: boolean; changedBuckets: string[] }> {
  const now = ctx.clock.now();
  const [stored, digests] = await Promise.all([ctx.store.getSiteHeartbeat(), ctx.store.getRosterDigests()]);
  const plan = planHeartbeat(stored, digests, machineIds, now, heartbeatTimeoutMs(ctx.config));
  if (!plan.refresh) return { stored: false, changedBuckets: [] };
  // The roster time first: a beat that loses it to a concurrent beat leaves the roster to that one, and a machine
  // that left keeps as last seen the roster time before this one (read above).
  const refreshed = await committedOnce(() => ctx.store.putSiteHeartbeat(stored, { rosterSeenAt: iso(now), machineCount: new Set(machineIds).size }));
  if (!refreshed || plan.changedBuckets.size === 0) return { stored: refreshed, changedBuckets: [] };

  // Lost to a concurrent beat or registration: the next beat compares against what won and writes what still differs.
  const buckets = await ctx.store.getRosterBuckets([...plan.changedBuckets.keys()]);
  const nextDigests: RosterDigests = { buckets: { ...digests?.buckets }, version: digests?.version ?? 0 };
  const rosterBuckets = [...plan.changedBuckets].map(([bucket, ids]) => {
    nextDigests.buckets[bucket] = rosterDigest(ids);
    const before = buckets.get(bucket) ?? null;
    return { before, after: bucketWithRoster(before, bucket, ids, stored?.rosterSeenAt, now) };
  });
  const written = await committedOnce(() => ctx.store.commit({ rosterBuckets, rosterDigests: { before: digests, after: nextDigests }, history: [] }));
  return { stored: true, changedBuckets: written ? rosterBuckets.map((b) => b.after.id) : [] };
}
