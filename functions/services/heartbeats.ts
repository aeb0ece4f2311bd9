import { bucketWithRoster, nextStaleCheck, planHeartbeat, SITE_STALE_CHECK, someoneLeft, type RosterAlerts, type RosterDigests } from '#domain/heartbeat.ts';
import { iso } from '#domain/time.ts';
import { heartbeatTimeoutMs, type AppContext } from './context.ts';
import { committedOnce } from './retry-on-stale.ts';

/**
 * The site agent's beat with its whole roster (and the alerts it reports for some of its machines): two small reads, the roster time every timeout/3, and when the
 * roster changed (or a machine that left it went stale), one transaction with the buckets whose ids changed, their
 * digests and the stale check. Never a read or write per machine: the roster-bucket reconciler applies a changed
 * bucket to its machines, and the stale-check reconciler looks at stale members, both from the stream.
 */
export async function receiveHeartbeat(
  ctx: AppContext,
  machineIds: string[],
  alerts: RosterAlerts = new Map(),
): Promise<{ stored: boolean; changedBuckets: string[] }> {
  const now = ctx.clock.now();
  const timeoutMs = heartbeatTimeoutMs(ctx.config);
  const [stored, digests] = await Promise.all([ctx.store.getSiteHeartbeat(), ctx.store.getRosterDigests()]);
  const plan = planHeartbeat(stored, digests, machineIds, now, timeoutMs, alerts);
  const staleCheckDue = nextStaleCheck(digests, false, undefined, now, timeoutMs).due;
  if (!plan.refresh && !staleCheckDue) return { stored: false, changedBuckets: [] };
  // The roster time first: a beat that loses it to a concurrent beat leaves the roster to that one, and a machine
  // that left keeps as last seen the roster time before this one (read above).
  const refreshed =
    !plan.refresh || (await committedOnce(() => ctx.store.putSiteHeartbeat(stored, { rosterSeenAt: iso(now), machineCount: new Set(machineIds).size })));
  if (!refreshed || (plan.changedBuckets.size === 0 && !staleCheckDue)) return { stored: refreshed && plan.refresh, changedBuckets: [] };

  const [buckets, staleCheck] = await Promise.all([
    ctx.store.getRosterBuckets([...plan.changedBuckets.keys()]),
    staleCheckDue ? ctx.store.getStaleCheck(SITE_STALE_CHECK) : null,
  ]);
  const rosterBuckets = [...plan.changedBuckets].map(([bucket, ids]) => {
    const before = buckets.get(bucket) ?? null;
    return { before, after: bucketWithRoster(before, bucket, ids, stored?.rosterSeenAt, now, plan.alerts.get(bucket)) };
  });
  const left = [...plan.changedBuckets].some(([bucket, ids]) => someoneLeft(buckets.get(bucket) ?? null, ids));
  const { nextStaleAt } = nextStaleCheck(digests, left, stored?.rosterSeenAt, now, timeoutMs);
  const nextDigests: RosterDigests = {
    buckets: { ...digests?.buckets, ...Object.fromEntries(rosterBuckets.map(({ after }) => [after.id, after.digest])) },
    ...(nextStaleAt ? { nextStaleAt } : {}),
    version: digests?.version ?? 0,
  };
  const staleChecks = staleCheckDue ? [{ before: staleCheck, after: { id: SITE_STALE_CHECK, requestedAt: iso(now), version: staleCheck?.version ?? 0 } }] : [];
  // Lost to a concurrent beat or registration: the next beat compares against what won and writes what still differs.
  const written = await committedOnce(() => ctx.store.commit({ rosterBuckets, rosterDigests: { before: digests, after: nextDigests }, staleChecks, history: [] }));
  return { stored: true, changedBuckets: written ? rosterBuckets.map((b) => b.after.id) : [] };
}
