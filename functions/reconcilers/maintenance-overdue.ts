import { isOverdueNow } from '#domain/maintenance/maintenance-deadlines.ts';
import type { AppContext } from '#runtime/context.ts';

/**
 * The sweep's look at open maintenance: how many machines are past their window and not back yet, as a gauge the
 * MaintenanceOverdue alarm watches. Two reads at most (the open list, then its records), however large the fleet.
 */
export async function watchOverdueMaintenance(ctx: AppContext): Promise<number> {
  const open = await ctx.store.getOpenMaintenances();
  const records = open && open.ids.length > 0 ? [...(await ctx.store.getMaintenances(open.ids)).values()] : [];
  const overdue = records.reduce((sum, maintenance) => sum + Object.values(maintenance.machines).filter(isOverdueNow).length, 0);
  ctx.metrics.gauge('MaintenanceOverdue', overdue);
  return overdue;
}
