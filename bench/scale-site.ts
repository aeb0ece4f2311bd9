// The scale soak's sizes and the site it runs on (sites as TOML, as a provider writes them).

export interface ScaleSoakOptions {
  machines: number;
  /** Plain instances placed before the churn (and kept at about this number during it). */
  instances: number;
  metaInstances: number;
  /** How long tenants churn and machines fail. */
  churnSeconds: number;
  /** Share of the fleet that fails during the churn, in percent (at least one machine). */
  failurePercent: number;
  /** Tenant workers calling the API one request after another. */
  apiWorkers: number;
  sweepIntervalMs: number;
  /** The simulated agent's beat and the site's heartbeat timeout (a roster of 10,000 on a loaded host takes seconds). */
  heartbeatIntervalSeconds: number;
  heartbeatTimeoutSeconds: number;
}

export const defaultScaleSoakOptions: ScaleSoakOptions = {
  machines: 10_000,
  instances: 2_000,
  metaInstances: 200,
  churnSeconds: 180,
  failurePercent: 1,
  apiWorkers: 4,
  sweepIntervalMs: 2_000,
  heartbeatIntervalSeconds: 2,
  heartbeatTimeoutSeconds: 15,
};

export const MACHINE_TYPES = ['gb200', 'h100'] as const;
const RACK_SIZE = 20;

/**
 * The soak's site. The agent provisions and cleans in 20 ms (real machines take minutes; the figures are the
 * control plane's own part). The repair-storm breaker and the replacement cap are
 * set above what 1% of the fleet failing needs: they are safety stops, and this soak measures the path they guard.
 */
export function scaleSiteToml(options: ScaleSoakOptions): string {
  const perType = Math.ceil(options.machines / MACHINE_TYPES.length);
  const groups = MACHINE_TYPES.map((type, i) => {
    const count = i === 0 ? options.machines - perType * (MACHINE_TYPES.length - 1) : perType;
    return `{ type = "${type}", count = ${count}, racks = ${Math.max(1, Math.ceil(count / RACK_SIZE))} }`;
  });
  return `
[site]
name = "bench-scale"
[heartbeat]
timeout_seconds = ${options.heartbeatTimeoutSeconds}
[instance_create_retry]
base_delay_ms = 10
timeout_ms = 5000
[meta_instance]
max_replacements_in_flight = ${Math.max(5, failuresOf(options))}
[repair_storm]
max_quarantines = ${options.machines}
max_fraction = 1
[simulator]
machines = [ ${groups.join(', ')} ]
heartbeat_interval_seconds = ${options.heartbeatIntervalSeconds}
provision_ms = 20
cleanup_ms = 20
`;
}

export const failuresOf = (options: ScaleSoakOptions) => Math.max(1, Math.round((options.machines * options.failurePercent) / 100));

/** How the soak runs, as its report states it. */
export const SCALE_SOAK_METHOD =
  'local runner (real handlers behind the API Gateway adapter, stream poller, sweep timer, simulated agent) on DynamoDB Local. Setup: N ' +
  'machines registered and live, the instances and meta-instances created through the API until all are Ready. Churn: `apiWorkers` tenants call ' +
  'one request after another (30% create and wait Ready, 30% release and wait Terminated, 20% list, 20% get) while the failures come at even ' +
  'intervals over the first two thirds of the churn, alternating health override (degraded) and heartbeat stop, each on a Ready member of a ' +
  'meta-instance. Afterwards the site is left to go quiet (stream idle, two sweeps) and every machine, instance and meta-instance is read back.';
