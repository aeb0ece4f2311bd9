import { isRecordKind } from '#reconcilers/reconciler.ts';
import { recordSources } from '#reconcilers/records.ts';
import { registry, type EntityRef } from '#reconcilers/registry.ts';
import { startRun, type Run } from '#reconcilers/runner.ts';
import type { AppContext } from './context.ts';
import { watchStuckRepairs } from './stuck-repairs.ts';
import { repairSummaryShard } from './fleet-summary.ts';
import { ageMs } from '#domain/time.ts';
import { loadHeartbeatView } from './heartbeat-view.ts';

/** A record that fell due is delivered to its watchers again, as if it had just changed. */
async function redeliver(ctx: AppContext, run: Run, ref: EntityRef): Promise<void> {
  if (!isRecordKind(ref.entity)) return run.reconcile([ref]);
  const record = await recordSources[ref.entity].get(ctx.store, ref.id);
  if (record) await run.reconcile(registry.concernedBy(ref.entity, record, record, ref.id));
}

/** The schedule's sweep: whatever is due and was not finished by a stream reaction (a crash, a lost lease). */
export async function sweep(ctx: AppContext, limit = 200): Promise<{ due: number; failed: number }> {
  const due = await ctx.store.dueEntities(ctx.clock.now(), limit);
  const run = startRun(ctx);
  const work = due.map((ref) => redeliver(ctx, run, ref));
  // A silent site agent makes every machine stale at once without a single write: check every meta-instance then.
  const heartbeat = await loadHeartbeatView(ctx);
  if (heartbeat.rosterSeenAt && ageMs(ctx.clock.now(), heartbeat.rosterSeenAt) > heartbeat.timeoutMs) {
    const metas = await ctx.store.listMetaInstances(null, { limit });
    work.push(...metas.items.map((meta) => run.reconcile([{ entity: 'meta-instance', id: meta.id }])));
  }
  const results = await Promise.allSettled([...work, watchStuckRepairs(ctx), repairSummaryShard(ctx)]);
  const failed = results.filter((r) => r.status === 'rejected');
  for (const failure of failed) ctx.log.error('sweep reconcile failed', { error: String((failure as PromiseRejectedResult).reason) });
  return { due: work.length, failed: failed.length };
}
