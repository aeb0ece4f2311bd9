import { describe, expect, it } from 'vitest';
import { fleetGauges } from '#domain/machines/fleet-gauges.ts';
import { summaryChange, type SummaryShard } from '#domain/machines/fleet-summary.ts';
import { SOURCES } from '#domain/core/overrides.ts';
import { AT, NOW, aMachine, aRepairRequest, summaryOfFresh } from '#test/support/fixtures.ts';
import type { HealthOverride, Machine } from '#domain/core/model.ts';

const heartbeat = { rosterSeenAt: NOW.toISOString(), timeoutMs: 30_000 };
const sla = { claimMs: 30 * 60_000, repairMs: 24 * 3_600_000 };
const override = (source: string): HealthOverride => ({ ...aRepairRequest(), source });

/** The gauges of these machines as the sweep reads them: the summary's shards, and the machines awaiting or in repair. */
function gaugesOf(machines: Machine[]) {
  const change = summaryChange(summaryOfFresh(machines))!;
  const shards: SummaryShard[] = change.fleetSummary!.shards.map((s) => s.after);
  const inRepair = machines.filter((m) => m.healthOverrides.some((o) => o.source === SOURCES.repairRequest));
  return fleetGauges(shards, inRepair, heartbeat, NOW, sla);
}

describe('fleet gauges', () => {
  it('count each machine type: allocatable, assigned, quarantined, stale, out for repair and repairs by stage', () => {
    const gauges = gaugesOf([
      aMachine({ id: 'a' }),
      aMachine({ id: 'b', state: 'Assigned', instanceId: 'i-1', assignedAt: AT }),
      aMachine({ id: 'c', healthOverrides: [override(SOURCES.tenantReportedIssue), aRepairRequest('c')] }),
      aMachine({ id: 'd', heartbeatLive: false, lastHeartbeatAt: '2025-03-01T11:00:00.000Z' }),
      aMachine({ id: 'e', healthOverrides: [override(SOURCES.outForRepair)] }),
      aMachine({ id: 'f', machineType: 'h100' }),
    ]);
    expect(Object.fromEntries(gauges)).toEqual({
      gb200: {
        Machines: 5,
        MachinesAllocatable: 1,
        MachinesAssigned: 1,
        MachinesQuarantined: 1,
        MachinesHeartbeatStale: 1,
        MachinesOutForRepair: 1,
        RepairsUnclaimed: 1,
        RepairsInRepair: 0,
        RepairsStuck: 0,
      },
      h100: {
        Machines: 1,
        MachinesAllocatable: 1,
        MachinesAssigned: 0,
        MachinesQuarantined: 0,
        MachinesHeartbeatStale: 0,
        MachinesOutForRepair: 0,
        RepairsUnclaimed: 0,
        RepairsInRepair: 0,
        RepairsStuck: 0,
      },
    });
  });

  it('count a claimed repair as in repair, and a repair past its SLA as stuck', () => {
    const requested = { ...aRepairRequest('m-1'), createdAt: '2025-02-01T00:00:00.000Z' };
    const gauges = gaugesOf([
      aMachine({ healthOverrides: [requested], instanceId: 'i-9', state: 'Assigned', assignedAt: '2025-02-01T01:00:00.000Z' }),
      aMachine({ id: 'm-2', healthOverrides: [requested] }),
    ]).get('gb200')!;
    expect(gauges).toMatchObject({ RepairsInRepair: 1, RepairsUnclaimed: 1, RepairsStuck: 2 });
  });
});
