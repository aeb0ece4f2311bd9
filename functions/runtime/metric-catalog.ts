// Every operational figure Fleetward publishes, in one place: the Powertools metrics (CloudWatch EMF) of the
// deployed functions, the local runner's GET /metrics (Prometheus text) and the stack's dashboard and alarms all
// take their names, kinds and meanings from here.

/** gauge: the latest value; counter: added up; timing: observations in milliseconds (sum and count locally). */
export type MetricKind = 'gauge' | 'counter' | 'timing';

interface MetricSpec {
  kind: MetricKind;
  help: string;
}

export const metricCatalog = {
  Machines: { kind: 'gauge', help: 'Registered machines, by machine type' },
  MachinesAllocatable: { kind: 'gauge', help: 'Machines an instance could be placed on now, by machine type' },
  MachinesAssigned: { kind: 'gauge', help: 'Machines in state Assigned (running an instance), by machine type' },
  MachinesQuarantined: { kind: 'gauge', help: 'Machines quarantined after a tenant-reported issue, by machine type' },
  MachinesHeartbeatStale: { kind: 'gauge', help: 'Machines the site agent has not seen within the heartbeat timeout, by machine type' },
  MachinesOutForRepair: { kind: 'gauge', help: 'Machines out for repair, by machine type' },
  RepairsUnclaimed: { kind: 'gauge', help: 'Repair requests no repair tenant has claimed yet, by machine type' },
  RepairsInRepair: { kind: 'gauge', help: 'Repair requests claimed by a repair tenant, by machine type' },
  RepairsStuck: { kind: 'gauge', help: 'Repairs past their claim or repair SLA (site-wide, and by machine type)' },
  RepairBreakerTripped: { kind: 'gauge', help: '1 while the repair-storm breaker is tripped, else 0' },
  MaintenanceOverdue: { kind: 'gauge', help: 'Machines in open maintenance past their window and not back yet (the MaintenanceOverdue alarm)' },
  MigrationsPending: { kind: 'gauge', help: 'Data migrations the table has still to run, after each sweep (the MigrationStalled alarm)' },
  MigrationItemsWalked: { kind: 'counter', help: 'Items a data migration walked (the MigrationStalled alarm: none while one is pending)' },
  ReplacementsInFlight: { kind: 'gauge', help: 'Meta-instance replacements still provisioning' },
  SiteAgentSilent: { kind: 'gauge', help: '1 while the site agent has sent no roster within the heartbeat timeout, else 0 (the SiteAgentSilent alarm)' },
  SiteAgentRosterAgeSeconds: { kind: 'gauge', help: "Seconds since the site agent's last heartbeat roster was stored" },
  CreateAttempts: { kind: 'counter', help: 'Create calls sent to the site agent, retries included' },
  CreateRetries: { kind: 'counter', help: 'Create calls that retried an earlier attempt' },
  CreateFailures: { kind: 'counter', help: 'Instance creates that finally failed (the rate alarm watches this)' },
  CreateFailuresByOutcome: { kind: 'counter', help: 'Instance creates that finally failed, by how the last attempt ended (timeout, network, http-<status>)' },
  CreateSucceeded: { kind: 'counter', help: 'Instance creates the site agent accepted' },
  TimeToReady: { kind: 'timing', help: 'Milliseconds from an instance being created to it being Ready, by machine type' },
  ReconcileLag: { kind: 'timing', help: "Milliseconds from a record's commit to the end of the stream reaction to it, by record kind" },
} as const satisfies Record<string, MetricSpec>;

export type MetricName = keyof typeof metricCatalog;

/** Dimensions (Prometheus labels) of one figure, e.g. `{ machineType: 'gb200' }`. */
export type Dimensions = Record<string, string>;
