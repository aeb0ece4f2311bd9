import { envInt } from '../env.ts';
import { defaultMaintenanceFanOutOptions, maintenanceFanOut } from '../maintenance-fan-out.ts';
import { definePart, dynamoOf } from '../part.ts';

const defaults = defaultMaintenanceFanOutOptions;

export const maintenancePart = definePart({
  name: 'maintenance',
  describe: 'maintenance declared on 1,000 of 10,000 machines: the answer, then free machines out of allocation and held instances noticed',
  dynamodb: { serves: 'the maintenance site and its floor', sitesOneAfterAnother: true },
  section: 'maintenance_fan_out',
  options: (env) => ({
    machines: envInt(env, 'BENCH_MAINTENANCE_MACHINES', defaults.machines),
    rackSize: envInt(env, 'BENCH_MAINTENANCE_RACK_SIZE', defaults.rackSize),
    scope: envInt(env, 'BENCH_MAINTENANCE_SCOPE', defaults.scope),
    held: envInt(env, 'BENCH_MAINTENANCE_HELD', defaults.held),
    orgs: envInt(env, 'BENCH_MAINTENANCE_ORGS', defaults.orgs),
    sweepIntervalMs: envInt(env, 'BENCH_MAINTENANCE_SWEEP_INTERVAL_MS', defaults.sweepIntervalMs),
    pollMs: envInt(env, 'BENCH_MAINTENANCE_POLL_MS', defaults.pollMs),
  }),
  run: (context, options) => maintenanceFanOut(dynamoOf(context).endpoint, context.id, options, context.progress),
  summaryKey: 'maintenance_fan_out',
  summarize: (r) => ({
    unit: 'ms from the declaration’s answer; ratio to the floor of as many plain machine writes',
    machines: r.config.machines,
    scope: r.config.scope,
    held: r.config.held,
    declare_ms: r.declare_ms.value,
    declare_within_deadline: r.declare_ms.within_deadline,
    free_out_of_allocation_ms: r.free_out_of_allocation_ms,
    held_noticed_ms: r.held_noticed_ms,
    floor_ms: r.floor.ms,
    ratio_free_out_to_floor: r.ratio_free_out_to_floor,
    ratio_noticed_to_floor: r.ratio_noticed_to_floor,
  }),
  failure: (r) => {
    if (!r.declare_ms.within_deadline) return `maintenance: the declaration took ${r.declare_ms.value} ms, past the API's ${r.declare_ms.deadline} ms`;
    const { scope_machines_still_allocatable: allocatable, held_instances_without_notice: unnoticed } = r.checked;
    return allocatable + unnoticed === 0
      ? undefined
      : `maintenance: ${allocatable} machines in scope still allocatable, ${unnoticed} held instances without notice`;
  },
});
