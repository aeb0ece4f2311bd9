import type { Requester } from '#domain/events/audit.ts';
import {
  counterItemOf,
  rackRef,
  shardRef,
  type Placement,
  type RackAggregate,
  type SummaryShard,
  type SummarySnapshot,
} from '#domain/machines/fleet-summary.ts';
import type { SafetyRules } from '#domain/repair/safety.ts';
import type { HealthOverride, Instance, Machine, MetaInstance } from '#domain/core/model.ts';
import { addMs, iso } from '#domain/core/time.ts';

// Domain records for tests that build them by hand. Each builder fills in a plain record at a fixed time; a test
// passes the fields it is about, and any value it relies on, as overrides.

/** The time the records are created at. */
export const T0 = new Date('2025-03-01T12:00:00.000Z');
/** T0 as the records hold it. */
export const AT = iso(T0);
/** A minute after T0: when the tests act. */
export const NOW = addMs(T0, 60_000);

/** The provider admin the service tests act as, and the API request they act in. */
export const ops: Requester = { actor: 'ops', requestId: 'req-ops' };

/** A free, healthy machine m-1 (gb200 on rack r1), in the site agent's roster, version 0. */
export const aMachine = (overrides: Partial<Machine> = {}): Machine => ({
  id: 'm-1',
  machineType: 'gb200',
  rack: 'r1',
  state: 'Ready',
  labels: {},
  healthOverrides: [],
  heartbeatLive: true,
  version: 0,
  createdAt: AT,
  updatedAt: AT,
  ...overrides,
});

/** Instance i-1 ("job") of acme, Provisioning on machine m-1, its create call not yet sent, version 0. */
export const anInstance = (overrides: Partial<Instance> = {}): Instance => ({
  id: 'i-1',
  org: 'acme',
  name: 'job',
  machineId: 'm-1',
  machineType: 'gb200',
  status: 'Provisioning',
  labels: {},
  createAttempts: 0,
  siteName: 'job',
  creation: { clientToken: 'tok-1', phase: 'pending' },
  createdBy: 'alice',
  createdAt: AT,
  updatedAt: AT,
  version: 0,
  ...overrides,
});

/** Meta-instance mi-1 of acme: one gb200 machine on any rack, Placing since it was created, version 0. */
export const aMetaInstance = (overrides: Partial<MetaInstance> = {}): MetaInstance => ({
  id: 'mi-1',
  org: 'acme',
  machineType: 'gb200',
  minNodes: 1,
  placement: { sameRack: false },
  labels: {},
  status: 'Placing',
  consecutiveFailures: 0,
  waitingSince: AT,
  createdBy: 'alice',
  createdAt: AT,
  updatedAt: AT,
  memberIds: [],
  version: 0,
  ...overrides,
});

/** The repair-request override an operator puts on `target` at T0 (template RequestRepair). */
export const aRepairRequest = (target = 'm-1'): HealthOverride => ({
  source: 'repair-request',
  mode: 'merge',
  alerts: [{ id: 'RequestRepair', target, message: 'repair', classifications: ['PreventAllocations'] }],
  createdBy: 'ops',
  createdAt: AT,
});

/** The summary snapshot of one machine's change at a placement (by default its own), as the reconciler loads it. */
export function summaryOfOne(machine: Machine | null, rack: RackAggregate | null, shard: SummaryShard | null, placement?: Placement): SummarySnapshot {
  const where = placement ?? { machineId: machine!.id, machineType: machine!.machineType, rack: machine!.rack };
  return {
    placements: [where],
    machines: new Map([[where.machineId, machine]]),
    racks: new Map([[rackRef(where.machineType, where.rack), rack]]),
    shards: new Map([[shardRef(where.machineType, counterItemOf(where.rack)), shard]]),
  };
}
/** The summary snapshot of machines counted for the first time: no rack or counter item stored yet. */
export function summaryOfFresh(machines: Machine[]): SummarySnapshot {
  return {
    placements: machines.map((m) => ({ machineId: m.id, machineType: m.machineType, rack: m.rack })),
    machines: new Map(machines.map((m) => [m.id, m])),
    racks: new Map(),
    shards: new Map(),
  };
}

/** A site's default safety rules (the config's defaults), for pure decisions that need them. */
export const SAFETY_RULES: SafetyRules = { maxQuarantines: 10, maxFraction: 0.1, windowMs: 60 * 60_000, maxRepairs: 2, repairWindowMs: 30 * 86_400_000 };
