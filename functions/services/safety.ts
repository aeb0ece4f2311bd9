import { auditEntry, auditTargets, type Requester } from '#domain/events/audit.ts';
import { closeStorm, handOverHeldBack, initialSafety, nextHeldBack, type ResetStep } from '#domain/repair/safety.ts';
import type { AppContext } from '#runtime/context.ts';
import { retryOnStale } from '#runtime/retry-on-stale.ts';

export async function showSafety(ctx: AppContext) {
  const safety = (await ctx.store.getSafety()) ?? initialSafety();
  return { repairStorm: safety.repairStorm, replacementsInFlight: await ctx.store.replacementsInFlight() };
}

/**
 * A provider closes the breaker. With `applyHeldBack`, the repair requests it held back are applied first, one
 * machine per transaction (domain/repair/safety.ts `ResetStep`), so a reset cut short is finished by asking again.
 */
export async function resetRepairStorm(ctx: AppContext, applyHeldBack: boolean, by: Requester) {
  const applied: string[] = [];
  const handedOver: string[] = [];
  for (;;) {
    const step = await retryOnStale(async () => {
      const stored = await ctx.store.getSafety();
      const machineId = applyHeldBack ? nextHeldBack(stored) : undefined;
      const now = ctx.clock.now();
      const decided = machineId === undefined ? closeStorm(stored) : handOverHeldBack(stored!, machineId, await ctx.store.getMachine(machineId), by.actor, now);
      await ctx.store.commit({ ...decided.change, audit: resetStepAudit(decided, by, now) });
      return decided;
    });
    if (step.kind === 'close') {
      const heldBack = [...handedOver, ...step.heldBack];
      ctx.log.info('repair-storm breaker reset', { actor: by.actor, requestId: by.requestId, heldBack, applied });
      return { ...(await showSafety(ctx)), heldBackAtReset: heldBack, applied };
    }
    handedOver.push(step.machineId);
    if (step.applied) applied.push(step.machineId);
  }
}

/** Each step of a reset is audited in its own transaction: a reset cut short shows what it already did. */
function resetStepAudit(step: ResetStep, by: Requester, now: Date) {
  const safety = step.change.safety!;
  if (step.kind === 'hand-over') {
    return auditEntry(by, now, 'held-back-repair-handed-over', auditTargets.machine(step.machineId), { after: { repairRequestApplied: step.applied } });
  }
  return auditEntry(by, now, 'repair-storm-reset', auditTargets.repairStorm, { before: safety.before?.repairStorm, after: safety.after.repairStorm });
}
