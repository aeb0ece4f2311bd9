import { fleetGauges, type TypeGauges } from '#domain/fleet-gauges.ts';
import type { Machine } from '#domain/model.ts';
import { ageMs } from '#domain/time.ts';
import type { AppContext } from './context.ts';
import { loadHeartbeatView } from './heartbeat-view.ts';
import { repairSla } from './stuck-repairs.ts';

const MACHINE_PAGE = 500;

async function allMachines(ctx: AppContext): Promise<Machine[]> {
  const machines: Machine[] = [];
  let nextToken: string | undefined;
  do {
    const page = await ctx.store.listMachines({ limit: MACHINE_PAGE, nextToken });
    machines.push(...page.items);
    nextToken = page.nextToken;
  } while (nextToken);
  return machines;
}

/**
 * The sweep's gauges: the fleet per machine type, the repair-storm breaker, replacements in flight and the age of
 * the site agent's roster.
 *
 * COST: no fleet-summary aggregate exists yet, so this reads every machine through the `byKind` index (a Query,
 * not a Scan: ~1 read unit per 4 KB of machines, ~fleet/500 round trips) once per sweep. That is off the request
 * path, but it grows with the fleet; once a summary record kept by the commits exists, read it here instead.
 */
export async function publishFleetMetrics(ctx: AppContext): Promise<void> {
  const now = ctx.clock.now();
  const [machines, heartbeat, safety, replacements] = await Promise.all([
    allMachines(ctx),
    loadHeartbeatView(ctx),
    ctx.store.getSafety(),
    ctx.store.replacementsInFlight(),
  ]);
  for (const [machineType, gauges] of fleetGauges(machines, heartbeat, now, repairSla(ctx.config))) {
    for (const [name, value] of Object.entries(gauges) as Array<[keyof TypeGauges, number]>) ctx.metrics.gauge(name, value, { machineType });
  }
  ctx.metrics.gauge('RepairBreakerTripped', safety?.repairStorm.state === 'tripped' ? 1 : 0);
  ctx.metrics.gauge('ReplacementsInFlight', replacements);
  if (heartbeat.rosterSeenAt) ctx.metrics.gauge('SiteAgentRosterAgeSeconds', Math.floor(ageMs(now, heartbeat.rosterSeenAt) / 1000));
}
