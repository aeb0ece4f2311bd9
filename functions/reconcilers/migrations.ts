import type { AppContext } from '#runtime/context.ts';
import { LATEST_DATA_VERSION } from '#store/data-version.ts';
import type { MigrationRun } from '#store/migrations/runner.ts';

/** Less than this left in a sweep's invocation: no migration slice (a page and its checkpoint need a moment). */
const SLICE_FLOOR_MS = 2_000;

/**
 * The sweep's share of the data migrations: after its own work, and outside its lease, the pending migrations run for
 * `[migrations] sweep_seconds` or what the invocation has left. Each run goes on from the checkpoints the last one
 * left, so a deploy that started them, a crash, or a timeout only delays them. Reports how many are pending (the
 * MigrationStalled alarm fires while some are and no items move).
 */
export async function runPendingMigrations(ctx: AppContext, timeLeftMs: () => number): Promise<MigrationRun | undefined> {
  const { migrations } = ctx.config;
  const sliceMs = Math.min(timeLeftMs(), migrations.sweep_seconds * 1000);
  if (sliceMs < SLICE_FLOOR_MS) return undefined;
  const run = await ctx.store.runMigrations(
    { segments: migrations.segments, writeUnitsPerSecond: migrations.max_write_units_per_second, contractAfterMs: migrations.contract_after_minutes * 60_000 },
    Date.now() + sliceMs,
    ctx.ids.next('migrations'),
  );
  ctx.metrics.gauge('MigrationsPending', LATEST_DATA_VERSION - run.dataVersion);
  ctx.metrics.count('MigrationItemsWalked', run.itemsDone);
  if (run.itemsDone > 0) {
    ctx.log.info('data migrations', { dataVersion: run.dataVersion, latest: LATEST_DATA_VERSION, itemsWalked: run.itemsDone, stoppedBy: run.stoppedBy });
  }
  return run;
}
