import { needsStuckAlert, stuckRepairAlert, watchRepair, type RepairSla, type RepairWatch } from '#domain/repair/stuck-repairs.ts';
import type { Machine } from '#domain/core/model.ts';
import { iso } from '#domain/core/time.ts';
import type { SiteConfig } from '#config/site-config.ts';
import type { AppContext } from '#runtime/context.ts';
import { retryOnStale } from '#runtime/retry-on-stale.ts';

export const repairSla = (config: SiteConfig): RepairSla => ({
  claimMs: config.repair_sla.claim_minutes * 60_000,
  repairMs: config.repair_sla.repair_hours * 3_600_000,
});

/** The sweep's look at repairs: emit RepairStuck once per stuck episode and publish how many are stuck. */
export async function watchStuckRepairs(ctx: AppContext, watched?: Machine[]): Promise<RepairWatch[]> {
  const now = ctx.clock.now();
  const sla = repairSla(ctx.config);
  // A sweep passes every machine with a repair request (read for its gauges too): those not yet due are not stuck.
  const candidates = watched ?? (await ctx.store.repairsToWatch(new Date(now.getTime() - sla.claimMs)));
  const stuck: RepairWatch[] = [];
  for (const candidate of candidates) {
    const watch = watchRepair(candidate, now, sla);
    if (!watch?.stuck) continue;
    stuck.push(watch);
    if (!needsStuckAlert(candidate, watch)) continue;
    await retryOnStale(async () => {
      const machine = await ctx.store.getMachine(candidate.id);
      const fresh = machine && watchRepair(machine, now, sla);
      if (!machine || !needsStuckAlert(machine, fresh ?? null)) return;
      await ctx.store.commit(stuckRepairAlert(machine, fresh!, iso(now)));
    });
  }
  ctx.metrics.gauge('RepairsStuck', stuck.length);
  return stuck;
}
