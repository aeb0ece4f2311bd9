import { resetStorm, type SafetyState } from '#domain/safety.ts';
import { hasOverride, SOURCES } from '#domain/overrides.ts';
import type { AppContext } from './context.ts';
import { addHealthOverride } from './machine-actions.ts';
import { retryOnStale } from './retry-on-stale.ts';
import { initialSafety } from '#domain/safety.ts';

export async function showSafety(ctx: AppContext) {
  const safety = (await ctx.store.getSafety()) ?? initialSafety();
  return { repairStorm: safety.repairStorm, replacementsInFlight: await ctx.store.replacementsInFlight() };
}

/**
 * A provider closes the breaker. With `applyHeldBack`, the repair requests it held back are applied now, to the
 * machines that are still quarantined and not escalated or already in repair.
 */
export async function resetRepairStorm(ctx: AppContext, applyHeldBack: boolean, actor: string) {
  const heldBack = await retryOnStale(async () => {
    const stored = await ctx.store.getSafety();
    const { safety, heldBack } = resetStorm(stored ?? initialSafety());
    await ctx.store.commit({ safety: { before: stored, after: safety as SafetyState }, history: [] });
    return heldBack;
  });
  const applied: string[] = [];
  if (applyHeldBack) {
    for (const machineId of heldBack) {
      const machine = await ctx.store.getMachine(machineId);
      if (!machine || !hasOverride(machine, SOURCES.tenantReportedIssue) || hasOverride(machine, SOURCES.repairRequest) || hasOverride(machine, SOURCES.outForRepair)) continue;
      const issue = machine.healthOverrides.find((o) => o.source === SOURCES.tenantReportedIssue)?.issue;
      await addHealthOverride(ctx, machineId, { template: 'request-repair', issue, message: 'Repair request held back by the repair-storm breaker, applied on reset' }, actor);
      applied.push(machineId);
    }
  }
  ctx.log.info('repair-storm breaker reset', { actor, heldBack, applied });
  return { ...(await showSafety(ctx)), heldBackAtReset: heldBack, applied };
}
