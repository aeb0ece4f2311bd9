import { envInt } from '../env.ts';
import { definePart, dynamoOf } from '../part.ts';
import { defaultScaleBurstOptions, scaleBurst } from '../scale-burst.ts';

const defaults = defaultScaleBurstOptions;

export const scaleBurstPart = definePart({
  name: 'scale-burst',
  describe: "one org's 400 creates at once on a site-scale type with 100 free, against an org each; a 2-node meta-instance after",
  dynamodb: { serves: 'the scale burst site' },
  section: 'scale_burst',
  options: (env) => ({
    machines: envInt(env, 'BENCH_SCALE_BURST_MACHINES', defaults.machines, 2),
    free: envInt(env, 'BENCH_SCALE_BURST_FREE', defaults.free),
    requests: envInt(env, 'BENCH_SCALE_BURST_REQUESTS', defaults.requests),
    rounds: envInt(env, 'BENCH_SCALE_BURST_ROUNDS', defaults.rounds),
    waiters: envInt(env, 'BENCH_SCALE_BURST_WAITERS', defaults.waiters, 0),
    sweepIntervalMs: envInt(env, 'BENCH_SCALE_BURST_SWEEP_INTERVAL_MS', defaults.sweepIntervalMs),
  }),
  run: (context, options) => scaleBurst(dynamoOf(context).endpoint, context.id, options, context.progress),
  summaryKey: 'scale_burst',
  summarize: (burst) => ({
    unit: 'ms (p50, p99 of every create answer); s (the meta-instance)',
    machines: burst.config.machines,
    free: burst.config.free,
    requests_per_burst: burst.config.requests,
    rounds: burst.config.rounds,
    one_org_p50_ms: burst.one_org.latency.median,
    one_org_p99_ms: burst.one_org.latency.p99,
    an_org_each_p50_ms: burst.an_org_each.latency.median,
    an_org_each_p99_ms: burst.an_org_each.latency.p99,
    ratio_one_org_over_an_org_each: burst.one_org_against_floor.value,
    goal_ratio: burst.one_org_against_floor.goal,
    outcomes: burst.one_org.outcomes,
    exactly_the_free_machines_won: burst.one_org_against_floor.exactly_the_free_machines_won,
    meta_after_burst_ready_s: burst.meta_after_burst.ready_s,
    meta_after_burst_goal_s: burst.meta_after_burst.goal_s,
    meta_after_burst_meets_goal: burst.meta_after_burst.meets_goal,
  }),
  failure: (burst) => {
    const broken = [burst.one_org, burst.an_org_each].some((f) => !f.no_machine_twice || f.answered_5xx > 0);
    if (broken) return 'scale-burst: a machine won twice or a 5xx answer';
    return burst.meta_after_burst.ready_s === null ? `scale-burst: the 2-node meta-instance not Ready within ${burst.meta_after_burst.timeout_s} s` : undefined;
  },
});
