import { fleetSummary, type SummaryShard } from '#domain/machines/fleet-summary.ts';
import type { HeartbeatView } from '#domain/core/health.ts';
import type { Machine } from '#domain/core/model.ts';
import { SOURCES } from '#domain/core/overrides.ts';
import { watchRepair, type RepairSla } from '#domain/repair/stuck-repairs.ts';

/** The sweep's per-machine-type gauges (names as in runtime/metric-catalog.ts). */
export interface TypeGauges {
  Machines: number;
  MachinesAllocatable: number;
  MachinesAssigned: number;
  MachinesQuarantined: number;
  MachinesHeartbeatStale: number;
  MachinesOutForRepair: number;
  RepairsUnclaimed: number;
  RepairsInRepair: number;
  RepairsStuck: number;
}

const zero = (): TypeGauges => ({
  Machines: 0,
  MachinesAllocatable: 0,
  MachinesAssigned: 0,
  MachinesQuarantined: 0,
  MachinesHeartbeatStale: 0,
  MachinesOutForRepair: 0,
  RepairsUnclaimed: 0,
  RepairsInRepair: 0,
  RepairsStuck: 0,
});

/**
 * Where the fleet stands, by machine type: the counts from the fleet summary's shards (as the summary route reads
 * them), the repairs from the machines awaiting or in repair (what the repair index holds). Nothing here reads the
 * fleet itself, so the sweep's cost does not grow with it.
 */
export function fleetGauges(shards: SummaryShard[], inRepair: Iterable<Machine>, heartbeat: HeartbeatView, now: Date, sla: RepairSla): Map<string, TypeGauges> {
  const byType = new Map<string, TypeGauges>();
  const gaugesOf = (machineType: string) => byType.get(machineType) ?? byType.set(machineType, zero()).get(machineType)!;
  for (const machineType of new Set(shards.map((s) => s.machineType))) {
    const summary = fleetSummary(
      shards.filter((s) => s.machineType === machineType),
      heartbeat,
      now,
    );
    if (summary.machines === 0) continue;
    Object.assign(gaugesOf(machineType), {
      Machines: summary.machines,
      MachinesAllocatable: summary.allocatable,
      MachinesAssigned: summary.byState.Assigned ?? 0,
      MachinesQuarantined: summary.byOverride[SOURCES.tenantReportedIssue] ?? 0,
      MachinesHeartbeatStale: summary.stale,
      MachinesOutForRepair: summary.byOverride[SOURCES.outForRepair] ?? 0,
    });
  }
  for (const machine of inRepair) {
    const repair = watchRepair(machine, now, sla);
    if (!repair) continue;
    const gauges = gaugesOf(machine.machineType);
    if (repair.stage === 'unclaimed') gauges.RepairsUnclaimed += 1;
    if (repair.stage === 'in-repair') gauges.RepairsInRepair += 1;
    if (repair.stuck) gauges.RepairsStuck += 1;
  }
  return byType;
}
