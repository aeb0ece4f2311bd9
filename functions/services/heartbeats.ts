import {
  bucketWithRoster,
  heartbeatWithPart,
  machinesOutsidePart,
  nextStaleCheck,
  partSeenAt,
  planHeartbeat,
  SITE_STALE_CHECK,
  someoneLeft,
  WHOLE_ROSTER,
  type RosterAlerts,
  type RosterDigests,
  type RosterPart,
  type SiteHeartbeat,
} from '#domain/machines/heartbeat.ts';
import { unprocessable } from '#domain/core/rejection.ts';
import { iso } from '#domain/core/time.ts';
import { heartbeatTimeoutMs, type AppContext } from '#runtime/context.ts';
import { committedOnce } from '#runtime/retry-on-stale.ts';

/** Tries of a part's roster time against concurrent beats of other parts (each writes the same record). */
const PART_TIME_TRIES = 5;

/**
 * The site agent's beat with its roster, or one part of it (and the alerts it reports for some of its machines): two
 * small reads, the roster time every timeout/3, and when the roster changed (or a machine that left it went
 * stale), one transaction with the buckets whose ids changed, their digests and the stale check. Never a read or
 * write per machine: the roster-bucket reconciler applies a changed bucket to its machines, and the stale-check
 * reconciler looks at stale members, both from the stream.
 */
export async function receiveHeartbeat(
  ctx: AppContext,
  machineIds: string[],
  alerts: RosterAlerts = new Map(),
  part: RosterPart = WHOLE_ROSTER,
): Promise<{ stored: boolean; changedBuckets: string[] }> {
  const outside = machinesOutsidePart(machineIds, part);
  if (outside.length > 0) {
    throw unprocessable(
      'roster-part-mismatch',
      `part ${part.index} of ${part.count} holds the machines whose bucket modulo ${part.count} ` +
        `is ${part.index}; ${outside.length} listed are not, e.g. ${outside.slice(0, 5).join(', ')}`,
    );
  }
  const now = ctx.clock.now();
  const timeoutMs = heartbeatTimeoutMs(ctx.config);
  const [initial, digests] = await Promise.all([ctx.store.getSiteHeartbeat(), ctx.store.getRosterDigests()]);
  const plan = planHeartbeat(initial, digests, machineIds, now, timeoutMs, alerts, part);
  const staleCheckDue = nextStaleCheck(digests, false, undefined, now, timeoutMs).due;
  if (!plan.refresh && !staleCheckDue) return { stored: false, changedBuckets: [] };
  // The roster time first: a beat that loses it to a concurrent beat of the same roster leaves the roster to that one,
  // and a machine that left keeps as last seen the time before this one (read above).
  const stored = plan.refresh ? await refreshRosterTime(ctx, initial, part, new Set(machineIds).size, now) : initial;
  if (stored === undefined) return { stored: false, changedBuckets: [] };
  if (plan.changedBuckets.size === 0 && !staleCheckDue) return { stored: plan.refresh, changedBuckets: [] };

  const seenBefore = partSeenAt(stored, part);
  const [buckets, staleCheck] = await Promise.all([
    ctx.store.getRosterBuckets([...plan.changedBuckets.keys()]),
    staleCheckDue ? ctx.store.getStaleCheck(SITE_STALE_CHECK) : null,
  ]);
  const rosterBuckets = [...plan.changedBuckets].map(([bucket, ids]) => {
    const before = buckets.get(bucket) ?? null;
    return { before, after: bucketWithRoster(before, bucket, ids, seenBefore, now, plan.alerts.get(bucket)) };
  });
  const left = [...plan.changedBuckets].some(([bucket, ids]) => someoneLeft(buckets.get(bucket) ?? null, ids));
  const { nextStaleAt } = nextStaleCheck(digests, left, seenBefore, now, timeoutMs);
  const nextDigests: RosterDigests = {
    buckets: { ...digests?.buckets, ...Object.fromEntries(rosterBuckets.map(({ after }) => [after.id, after.digest])) },
    ...(nextStaleAt ? { nextStaleAt } : {}),
    version: digests?.version ?? 0,
  };
  const staleChecks = staleCheckDue ? [{ before: staleCheck, after: { id: SITE_STALE_CHECK, requestedAt: iso(now), version: staleCheck?.version ?? 0 } }] : [];
  // Lost to a concurrent beat or registration: the next beat compares against what won and writes what still differs.
  const written = await committedOnce(() =>
    ctx.store.commit({ rosterBuckets, rosterDigests: { before: digests, after: nextDigests }, staleChecks, history: [] }),
  );
  return { stored: true, changedBuckets: written ? rosterBuckets.map((b) => b.after.id) : [] };
}

/**
 * Stores the time `part` was seen; returns the record as it was before this beat's write, or undefined when a
 * concurrent beat of the whole roster won (it carries the same news). Parts of a split roster are different news, so
 * a part that loses to another part's write reads the record again and tries once more.
 */
async function refreshRosterTime(ctx: AppContext, initial: SiteHeartbeat | null, part: RosterPart, machineCount: number, now: Date) {
  let stored = initial;
  for (let tries = 1; ; tries++) {
    const before = stored;
    if (await committedOnce(() => ctx.store.putSiteHeartbeat(before, heartbeatWithPart(before, part, machineCount, now)))) return before;
    if (part.count === 1 || tries === PART_TIME_TRIES) return undefined;
    stored = await ctx.store.getSiteHeartbeat();
  }
}
