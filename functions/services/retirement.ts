import { auditEntry, auditTargets, type Requester } from '#domain/events/audit.ts';
import { retireMachine as decideRetirement } from '#domain/machines/retirement.ts';
import type { AppContext } from '#runtime/context.ts';
import { retryOnStale } from '#runtime/retry-on-stale.ts';
import { requireMachine } from '#services/instances.ts';
import { showMachine } from '#services/machines.ts';

/** A provider retires a machine for good; retiring a retired machine again changes nothing. */
export async function retireMachine(ctx: AppContext, machineId: string, reason: string, by: Requester) {
  await retryOnStale(async () => {
    const machine = await requireMachine(ctx, machineId);
    const now = ctx.clock.now();
    const change = decideRetirement(machine, reason, by.actor, now);
    if (!change) return;
    await ctx.store.commit({ ...change, audit: auditEntry(by, now, 'machine-retired', auditTargets.machine(machineId), { after: { reason } }) });
  });
  return showMachine(ctx, machineId);
}
