import { watchRepair, type RepairWatch } from '#domain/repair/stuck-repairs.ts';
import { repairSla } from '#reconcilers/stuck-repairs.ts';
import type { AppContext } from '#runtime/context.ts';

/**
 * `GET /admin/repairs`: machines with a repair request, where each is and how long it has waited (a page may hold
 * fewer than `limit` when only stuck ones are asked for).
 */
export async function listRepairs(ctx: AppContext, stuckOnly: boolean, page: { limit: number; nextToken?: string | undefined }) {
  const now = ctx.clock.now();
  const sla = repairSla(ctx.config);
  const result = await ctx.store.machinesAwaitingRepair(page);
  const items = result.items
    .map((machine) => watchRepair(machine, now, sla))
    .filter((watch): watch is RepairWatch => watch !== null && (!stuckOnly || watch.stuck))
    .map(({ machineId, since, waitingMinutes, stage, stuck, deadline }) => ({ machineId, since, waitingMinutes, stage, stuck, deadline }));
  return { items, nextToken: result.nextToken };
}
