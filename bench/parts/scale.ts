import { envInt } from '../env.ts';
import { definePart, dynamoOf } from '../part.ts';
import { defaultScaleSoakOptions, scaleSoak } from '../scale-soak.ts';

const defaults = defaultScaleSoakOptions;

export const scalePart = definePart({
  name: 'scale',
  describe: 'a site-scale soak: tenants churn through the API while 1% of 10,000 machines fail; the invariants after',
  dynamodb: { serves: 'the scale soak' },
  section: 'scale_soak',
  options: (env) => ({
    machines: envInt(env, 'BENCH_SCALE_MACHINES', defaults.machines),
    instances: envInt(env, 'BENCH_SCALE_INSTANCES', defaults.instances, 0),
    metaInstances: envInt(env, 'BENCH_SCALE_META_INSTANCES', defaults.metaInstances),
    churnSeconds: envInt(env, 'BENCH_SCALE_CHURN_S', defaults.churnSeconds),
    failurePercent: envInt(env, 'BENCH_SCALE_FAILURE_PERCENT', defaults.failurePercent),
    apiWorkers: envInt(env, 'BENCH_SCALE_API_WORKERS', defaults.apiWorkers),
    sweepIntervalMs: envInt(env, 'BENCH_SCALE_SWEEP_INTERVAL_MS', defaults.sweepIntervalMs),
    heartbeatIntervalSeconds: envInt(env, 'BENCH_SCALE_HEARTBEAT_INTERVAL_S', defaults.heartbeatIntervalSeconds),
    heartbeatTimeoutSeconds: envInt(env, 'BENCH_SCALE_HEARTBEAT_TIMEOUT_S', defaults.heartbeatTimeoutSeconds),
  }),
  run: (context, options) => scaleSoak(dynamoOf(context).endpoint, context.id, options, context.progress),
  summaryKey: 'scale_soak',
  summarize: (scale) => ({
    unit: 'ms (API latency, reconcile lag medians); capacity units per minute',
    machines: scale.config.machines,
    instances: scale.config.instances,
    meta_instances: scale.config.metaInstances,
    churn_s: scale.churn_s,
    api_p50: scale.api.all.median,
    api_p99: scale.api.all.p99,
    create_to_ready_median: scale.reconcile_lag.create_to_ready.median,
    failure_to_replacement_ready_median: scale.reconcile_lag.failure_to_replacement_ready.all?.median ?? null,
    read_units_per_minute: scale.dynamodb_per_minute.read_units,
    write_units_per_minute: scale.dynamodb_per_minute.write_units,
    site_start: {
      fleet_allocatable_after_up_s: scale.site_start.fleet_allocatable_after_up_s,
      floor_s: scale.site_start.floor_s,
      ratio_to_floor: scale.site_start.ratio_to_floor,
      goal_ratio_to_floor: scale.site_start.goal_ratio_to_floor,
      meets_goal: scale.site_start.ratio_to_floor <= scale.site_start.goal_ratio_to_floor,
    },
    failures_replaced: `${scale.failures.replaced}/${scale.failures.injected}`,
    invariants_hold: scale.invariants.ok,
  }),
  failure: (scale) => (scale.invariants.ok ? undefined : `scale soak: invariants broken: ${JSON.stringify(scale.invariants)}`),
});
