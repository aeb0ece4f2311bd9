import { closeStorm, handOverHeldBack, initialSafety, nextHeldBack } from '#domain/safety.ts';
import type { AppContext } from './context.ts';
import { retryOnStale } from './retry-on-stale.ts';

export async function showSafety(ctx: AppContext) {
  const safety = (await ctx.store.getSafety()) ?? initialSafety();
  return { repairStorm: safety.repairStorm, replacementsInFlight: await ctx.store.replacementsInFlight() };
}

/**
 * A provider closes the breaker. With `applyHeldBack`, the repair requests it held back are applied first, one
 * machine per transaction (domain/safety.ts `ResetStep`), so a reset cut short is finished by asking again.
 */
export async function resetRepairStorm(ctx: AppContext, applyHeldBack: boolean, actor: string) {
  const applied: string[] = [];
  const handedOver: string[] = [];
  for (;;) {
    const step = await retryOnStale(async () => {
      const stored = await ctx.store.getSafety();
      const machineId = applyHeldBack ? nextHeldBack(stored) : undefined;
      const decided =
        machineId === undefined ? closeStorm(stored) : handOverHeldBack(stored!, machineId, await ctx.store.getMachine(machineId), actor, ctx.clock.now());
      await ctx.store.commit(decided.change);
      return decided;
    });
    if (step.kind === 'close') {
      const heldBack = [...handedOver, ...step.heldBack];
      ctx.log.info('repair-storm breaker reset', { actor, heldBack, applied });
      return { ...(await showSafety(ctx)), heldBackAtReset: heldBack, applied };
    }
    handedOver.push(step.machineId);
    if (step.applied) applied.push(step.machineId);
  }
}
