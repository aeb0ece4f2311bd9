import type { SummaryShard } from '#domain/machines/fleet-summary.ts';
import { fleetGauges, type TypeGauges } from '#domain/machines/fleet-gauges.ts';
import type { HeartbeatView } from '#domain/core/health.ts';
import type { Machine } from '#domain/core/model.ts';
import type { SafetyState } from '#domain/repair/safety.ts';
import { ageMs } from '#domain/core/time.ts';
import type { AppContext } from '#runtime/context.ts';
import { heartbeatViewOf } from '#runtime/heartbeat-view.ts';
import { repairSla } from '#reconcilers/stuck-repairs.ts';

/**
 * What a scheduled sweep reads of the site once, at its start, and all its checks share: the gauges, the silence
 * check, the stuck-repair watch and the summary's drift repair. The fleet summary's shards and the repair index,
 * never the fleet.
 */
export interface FleetReading {
  at: Date;
  heartbeat: HeartbeatView;
  safety: SafetyState | null;
  shards: SummaryShard[];
  /** Every machine with a repair request (as `repairsToWatch(at)`): awaiting a claim or in repair. */
  inRepair: Machine[];
  replacementsInFlight: number;
}

/** Four requests side by side: the heartbeat and safety records in one batch read, and three index queries. */
export async function readFleet(ctx: AppContext): Promise<FleetReading> {
  const at = ctx.clock.now();
  const [records, shards, inRepair, replacementsInFlight] = await Promise.all([
    ctx.store.getRecords({ siteHeartbeat: true, safety: true }),
    ctx.store.summaryShards(),
    ctx.store.repairsToWatch(at),
    ctx.store.replacementsInFlight(),
  ]);
  return { at, heartbeat: heartbeatViewOf(ctx, records.siteHeartbeat ?? null), safety: records.safety ?? null, shards, inRepair, replacementsInFlight };
}

/** The sweep's gauges: the fleet per machine type, the repair-storm breaker, replacements in flight and the age of the site agent's roster. */
export function publishFleetMetrics(ctx: AppContext, reading: FleetReading): void {
  const { at, heartbeat } = reading;
  for (const [machineType, gauges] of fleetGauges(reading.shards, reading.inRepair, heartbeat, at, repairSla(ctx.config))) {
    for (const [name, value] of Object.entries(gauges) as Array<[keyof TypeGauges, number]>) ctx.metrics.gauge(name, value, { machineType });
  }
  ctx.metrics.gauge('RepairBreakerTripped', reading.safety?.repairStorm.state === 'tripped' ? 1 : 0);
  ctx.metrics.gauge('ReplacementsInFlight', reading.replacementsInFlight);
  if (heartbeat.rosterSeenAt) ctx.metrics.gauge('SiteAgentRosterAgeSeconds', Math.floor(ageMs(at, heartbeat.rosterSeenAt) / 1000));
}
