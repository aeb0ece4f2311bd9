import { staleClass, type RackAggregate, type Tally } from '#domain/machines/fleet-summary.ts';
import type { HeartbeatView } from '#domain/core/health.ts';

/** A rack's counts, and per NVLink domain its machines carry, as the machine listing would show them now. */
export interface RackTallies {
  tally: Tally;
  byNvlinkDomain?: Record<string, Tally>;
}

/**
 * A rack's tallies from its own item's entries, the way the summary counts a type: a retired machine is no capacity
 * and is left out; allocatable excludes machines whose heartbeat is stale now (the rule applied per entry); quarantined
 * counts machines with an override that prevents allocation.
 */
export function rackTallies(rack: RackAggregate, heartbeat: HeartbeatView, now: Date): RackTallies {
  const tally: Tally = { machines: 0, allocatable: 0, quarantined: 0 };
  const byNvlinkDomain: Record<string, Tally> = {};
  for (const entry of Object.values(rack.machines)) {
    if (entry.lifecycle === 'retired') continue;
    const allocatable = entry.allocatable && !staleClass(entry.live, entry.lastHeartbeatAt, heartbeat, now);
    const counted = [
      tally,
      ...(entry.nvlinkDomain === undefined ? [] : [(byNvlinkDomain[entry.nvlinkDomain] ??= { machines: 0, allocatable: 0, quarantined: 0 })]),
    ];
    for (const t of counted) {
      t.machines += 1;
      if (allocatable) t.allocatable += 1;
      if (entry.quarantined) t.quarantined += 1;
    }
  }
  return { tally, ...(Object.keys(byNvlinkDomain).length > 0 ? { byNvlinkDomain } : {}) };
}
