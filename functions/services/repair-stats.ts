import { lastDays, repairStats, type RepairStats } from '#domain/repair/repair-stats.ts';
import type { AppContext } from '#runtime/context.ts';

/** One Query of the eventsByDay index per day (at most 90): costs the window's events, not the fleet. */
export async function readRepairStats(ctx: AppContext, dayCount: number): Promise<RepairStats> {
  const days = lastDays(ctx.clock.now(), dayCount);
  const entries = await Promise.all(days.map((day) => ctx.store.eventsOnDay(day)));
  return repairStats(days, entries.flat());
}
