import { fleetGauges, type TypeGauges } from '#domain/fleet-gauges.ts';
import type { HeartbeatView } from '#domain/health.ts';
import { ageMs } from '#domain/time.ts';
import type { AppContext } from './context.ts';
import { loadHeartbeatView } from './heartbeat-view.ts';
import { repairSla } from './stuck-repairs.ts';

/**
 * The sweep's gauges: the fleet per machine type, the repair-storm breaker, replacements in flight and the age of
 * the site agent's roster. Reads the fleet summary's shards and the repair index, never the fleet; the site
 * heartbeat too, unless the run already read it.
 */
export async function publishFleetMetrics(ctx: AppContext, heartbeatRead?: HeartbeatView): Promise<void> {
  const now = ctx.clock.now();
  const [shards, inRepair, heartbeat, safety, replacements] = await Promise.all([
    ctx.store.summaryShards(),
    ctx.store.repairsToWatch(now),
    heartbeatRead ?? loadHeartbeatView(ctx),
    ctx.store.getSafety(),
    ctx.store.replacementsInFlight(),
  ]);
  for (const [machineType, gauges] of fleetGauges(shards, inRepair, heartbeat, now, repairSla(ctx.config))) {
    for (const [name, value] of Object.entries(gauges) as Array<[keyof TypeGauges, number]>) ctx.metrics.gauge(name, value, { machineType });
  }
  ctx.metrics.gauge('RepairBreakerTripped', safety?.repairStorm.state === 'tripped' ? 1 : 0);
  ctx.metrics.gauge('ReplacementsInFlight', replacements);
  if (heartbeat.rosterSeenAt) ctx.metrics.gauge('SiteAgentRosterAgeSeconds', Math.floor(ageMs(now, heartbeat.rosterSeenAt) / 1000));
}
