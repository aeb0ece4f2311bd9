import { allocatability, type HeartbeatView } from './health.ts';
import type { Machine } from './model.ts';
import { hasOverride, SOURCES } from './overrides.ts';
import { watchRepair, type RepairSla } from './stuck-repairs.ts';

/** The sweep's per-machine-type gauges (names as in services/metric-catalog.ts). */
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

/** Where each machine stands, counted by machine type. */
export function fleetGauges(machines: Iterable<Machine>, heartbeat: HeartbeatView, now: Date, sla: RepairSla): Map<string, TypeGauges> {
  const byType = new Map<string, TypeGauges>();
  for (const machine of machines) {
    const gauges = byType.get(machine.machineType) ?? byType.set(machine.machineType, zero()).get(machine.machineType)!;
    const { allocatable, notAllocatableReasons } = allocatability(machine, heartbeat, now);
    const repair = watchRepair(machine, now, sla);
    gauges.Machines += 1;
    if (allocatable) gauges.MachinesAllocatable += 1;
    if (machine.state === 'Assigned') gauges.MachinesAssigned += 1;
    if (hasOverride(machine, SOURCES.tenantReportedIssue)) gauges.MachinesQuarantined += 1;
    if (notAllocatableReasons.includes('heartbeat-stale')) gauges.MachinesHeartbeatStale += 1;
    if (hasOverride(machine, SOURCES.outForRepair)) gauges.MachinesOutForRepair += 1;
    if (repair?.stage === 'unclaimed') gauges.RepairsUnclaimed += 1;
    if (repair?.stage === 'in-repair') gauges.RepairsInRepair += 1;
    if (repair?.stuck) gauges.RepairsStuck += 1;
  }
  return byType;
}
