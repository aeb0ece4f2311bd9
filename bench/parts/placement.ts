import { envInt } from '../env.ts';
import { definePart } from '../part.ts';
import { defaultPlacementOptions, placementBench } from '../placement.ts';
import { round } from '../stats.ts';

export const placementPart = definePart({
  name: 'placement',
  describe: 'placement decisions for 1,000 meta-instances on 10,000 machines with part-used racks, pure domain',
  section: 'placement',
  options: (env) => ({
    ...defaultPlacementOptions,
    machines: envInt(env, 'BENCH_PLACEMENT_MACHINES', defaultPlacementOptions.machines),
    metaInstances: envInt(env, 'BENCH_PLACEMENT_META_INSTANCES', defaultPlacementOptions.metaInstances),
    passes: envInt(env, 'BENCH_PLACEMENT_PASSES', defaultPlacementOptions.passes),
  }),
  run(context, options) {
    context.progress(`placement: ${options.metaInstances} meta-instances on ${options.machines} machines, pure domain`);
    return placementBench(options);
  },
  summaryKey: 'placement',
  summarize: (placement) => {
    const loaded = placement.candidates_as_the_service_loads_them;
    return {
      unit: 'ms for all decisions (median pass), µs per decision',
      meta_instances: placement.config.meta_instances,
      machines: placement.config.machines,
      total_ms: loaded.total.median,
      per_decision_median_us: loaded.per_decision.median,
      per_decision_p99_us: loaded.per_decision.p99,
      placed: loaded.outcomes.placed,
      errors: loaded.outcomes.errors,
      false_placement_errors: placement.goals.false_placement_errors,
      all_decisions_goal: placement.goals.all_decisions_ms,
      false_placement_errors_first_page_only: placement.candidates_first_page_only.outcomes.false_placement_errors,
      share_of_a_60s_sweep: { unit: 'ratio (all decisions / 60 s)', value: round(loaded.total.median / 60_000, 5) },
    };
  },
});
