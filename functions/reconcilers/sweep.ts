import { watchOverdueMaintenance } from '#reconcilers/maintenance-overdue.ts';
import { requestIdOf } from '#runtime/request-scope.ts';
import { isRecordKind } from '#reconcilers/reconciler.ts';
import { recordSources } from '#reconcilers/records.ts';
import { isEntityRef, registry, type EntityRef } from '#reconcilers/registry.ts';
import { startRun, type Run } from '#reconcilers/runner.ts';
import type { AppContext } from '#runtime/context.ts';
import { watchStuckRepairs } from '#reconcilers/stuck-repairs.ts';
import { addMs, iso } from '#domain/core/time.ts';
import { siteAgentSilence } from '#domain/machines/site-agent-silence.ts';
import { committedOnce } from '#runtime/retry-on-stale.ts';
import { repairSummaryShard } from '#reconcilers/summary-repair.ts';
import { repairOrgCapacityShard } from '#reconcilers/org-capacity-repair.ts';
import { publishFleetMetrics, readFleet, type FleetReading } from '#reconcilers/fleet-metrics.ts';
import { deliverStrandedOutbox } from '#reconcilers/outbox-fallback.ts';
import { takeCapacityPoints } from '#reconcilers/capacity-history.ts';

/** Due entries per read of the due index; the run reconciles them at its own concurrency (runner.ts). */
export const DUE_PAGE = 200;
/** Meta-instances a sweep looks at when the site agent went silent. */
const SILENT_AGENT_LIMIT = 200;

/** Where a sweep that ran out of time stopped in the due index: its follow-up goes on from there. */
export interface SweepPosition {
  /** The `now` the due index was read at: the follow-up reads the same range, so the token stays valid. */
  now: string;
  nextToken: string;
}

export interface SweepOptions {
  /** Milliseconds left to start more work in; a page is only begun while this is positive. Default: no limit. */
  timeLeftMs?: () => number;
  /** A follow-up run: go on through the due index from here; the run that handed over did everything else. */
  from?: SweepPosition | undefined;
  /**
   * The sweep's lease: how long one hold lasts (`holdMs`), renewed while the run goes on but never past how long the run
   * may live (`lifeMs`, its invocation's remaining time). Default: one hold for Lambda's longest run, 15 minutes.
   */
  lease?: { holdMs: number; lifeMs: number };
}

export interface SweepResult {
  /** Entities reconciled. */
  due: number;
  failed: number;
  /** Due work is left: a follow-up run should start at once from here. */
  followUp?: SweepPosition;
  /** Another run held the sweep's lease: this one did nothing. */
  skipped?: true;
}

/**
 * The schedule and the follow-up rule can start a run while another still goes on (and Lambda may retry an
 * invocation): runs take the site's sweep lease, so two never do the same work. A run holds it for at most as long as
 * it can live, renewing a shorter hold while it goes on, and gives it back when done. A crashed run's lease expires at
 * the end of its hold, so the runs after a crash wait one hold at most, not a whole invocation.
 */
export const SWEEP_LEASE = 'sweep';
const DEFAULT_LEASE = { holdMs: 15 * 60_000, lifeMs: 15 * 60_000 };

/** The metric the sweep reports (1 while the site agent is silent), which the SiteAgentSilent alarm watches. */
export const SITE_AGENT_SILENT_METRIC = 'SiteAgentSilent';

/** A record that fell due is delivered to its watchers again, as if it had just changed. */
async function redeliver(ctx: AppContext, run: Run, ref: EntityRef): Promise<void> {
  if (!isRecordKind(ref.entity)) return run.reconcile([ref]);
  const record = await recordSources[ref.entity].get(ctx.store, ref.id);
  // Finishing what a request started: the same request id as the stream reaction would have used.
  if (record) await run.reconcile(registry.concernedBy(ref.entity, record, record, ref.id), requestIdOf(record));
}

/**
 * Every due entry, page after page, each page reconciled in parallel before the next is read, while time is left.
 * At least one page is done per run, so a chain of follow-ups always gets through a backlog.
 */
async function sweepDue(ctx: AppContext, run: Run, { timeLeftMs = () => Number.POSITIVE_INFINITY, from }: SweepOptions) {
  const now = from ? new Date(from.now) : ctx.clock.now();
  const results: PromiseSettledResult<void>[] = [];
  let nextToken = from?.nextToken;
  do {
    const page = await ctx.store.dueEntities(now, { limit: DUE_PAGE, nextToken });
    results.push(...(await Promise.allSettled(page.items.filter(isEntityRef).map((ref) => redeliver(ctx, run, ref)))));
    nextToken = page.nextToken;
  } while (nextToken && timeLeftMs() > 0);
  return { results, followUp: nextToken ? { now: iso(now), nextToken } : undefined };
}

/**
 * A silent site agent makes every machine stale at once without a single write: check every meta-instance then,
 * and say so (the SiteAgentSilent event, once per silence, and the metric its alarm watches). Returns the work it
 * started: a reconcile per meta-instance, and the event's record.
 */
interface SilenceWork {
  reconciles: Array<Promise<void>>;
  record?: Promise<boolean>;
}

async function checkSiteAgentSilence(ctx: AppContext, run: Run, reading: FleetReading): Promise<SilenceWork> {
  const { rosterSeenAt } = reading.heartbeat;
  const silence = rosterSeenAt ? siteAgentSilence(ctx.config.site.name, rosterSeenAt, reading.at, ctx.config.heartbeat.timeout_seconds) : null;
  ctx.metrics.gauge(SITE_AGENT_SILENT_METRIC, silence ? 1 : 0);
  if (!silence) return { reconciles: [] };
  const metas = await ctx.store.listMetaInstances(null, { limit: SILENT_AGENT_LIMIT });
  return {
    reconciles: metas.items.map((meta) => run.reconcile([{ entity: 'meta-instance', id: meta.id }])),
    // Written once per silence: a later sweep of the same silence loses the race to its own earlier entry.
    record: committedOnce(() => ctx.store.commit({ history: [], siteHistory: [silence] })),
  };
}

/**
 * What a scheduled run does besides the due work, all from one reading of the site taken at its start: the gauges
 * (once per schedule tick, whether or not the due work needs a follow-up run), the stuck-repair watch, the
 * summary's and the org capacity counters' drift repairs, the orgs' capacity history points and the silence check; and
 * the outbox events the stream left undelivered.
 */
async function scheduledChecks(ctx: AppContext, run: Run): Promise<{ reconciled: number; results: Array<PromiseSettledResult<unknown>> }> {
  // Observed at once: they may fail while the others are still reading.
  const outbox = Promise.allSettled([deliverStrandedOutbox(ctx)]);
  const reading = await readFleet(ctx);
  publishFleetMetrics(ctx, reading);
  // Observed at once: they may fail while the silence check is still reading.
  const checks = Promise.allSettled([
    watchStuckRepairs(ctx, reading.inRepair),
    repairSummaryShard(ctx, reading.shards),
    watchOverdueMaintenance(ctx),
    repairOrgCapacityShard(ctx),
    takeCapacityPoints(ctx, reading.heartbeat),
  ]);
  const silence = checkSiteAgentSilence(ctx, run, reading);
  // Its own failure is one result; the work it started, one each.
  const started = await silence.catch((): SilenceWork => ({ reconciles: [] }));
  const silenceResults = await Promise.allSettled([silence, ...started.reconciles, ...(started.record ? [started.record] : [])]);
  return { reconciled: started.reconciles.length, results: [...(await checks), ...silenceResults, ...(await outbox)] };
}

/** The schedule's sweep: whatever is due and was not finished by a stream reaction (a crash, a lost lease). */
export async function sweep(ctx: AppContext, options: SweepOptions = {}): Promise<SweepResult> {
  const holder = ctx.ids.next('sweep');
  const now = ctx.clock.now();
  const { holdMs, lifeMs } = options.lease ?? DEFAULT_LEASE;
  const endsAt = addMs(now, lifeMs).getTime();
  const holdUntil = () => iso(new Date(Math.min(addMs(ctx.clock.now(), holdMs).getTime(), endsAt)));
  if (!(await ctx.store.takeLease(SWEEP_LEASE, holder, holdUntil(), iso(now)))) {
    ctx.log.info('sweep skipped: another run holds the sweep lease');
    return { due: 0, failed: 0, skipped: true };
  }
  const renewing =
    lifeMs > holdMs
      ? setInterval(() => {
          ctx.store.renewLease(SWEEP_LEASE, holder, holdUntil()).catch((error: unknown) => {
            ctx.log.warn('sweep lease not renewed; it expires at the end of its hold', { error: String(error) });
          });
        }, holdMs / 3)
      : undefined;
  renewing?.unref();
  try {
    return await sweepWithLease(ctx, options);
  } finally {
    clearInterval(renewing);
    await ctx.store.releaseLease(SWEEP_LEASE, holder, iso(ctx.clock.now())).catch((error: unknown) => {
      ctx.log.warn('sweep lease not given back; it expires by itself', { error: String(error) });
    });
  }
}

async function sweepWithLease(ctx: AppContext, options: SweepOptions): Promise<SweepResult> {
  const run = startRun(ctx);
  // Side by side with the due pages (and observed at once, so a failure among them is never unhandled).
  const noChecks = { reconciled: 0, results: [] };
  const checks = options.from
    ? Promise.resolve(noChecks)
    : scheduledChecks(ctx, run).catch((error: unknown) => ({ ...noChecks, results: [{ status: 'rejected', reason: error } as const] }));
  const due = await sweepDue(ctx, run, options);
  const ticked = await checks;
  const failed = [...due.results, ...ticked.results].filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  for (const failure of failed) ctx.log.error('sweep reconcile failed', { error: String(failure.reason) });
  return { due: due.results.length + ticked.reconciled, failed: failed.length, ...(due.followUp ? { followUp: due.followUp } : {}) };
}
