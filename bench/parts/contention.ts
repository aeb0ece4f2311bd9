import { contentionBench, defaultContentionOptions } from '../contention.ts';
import { envInt } from '../env.ts';
import { definePart, dynamoOf } from '../part.ts';

export const contentionPart = definePart({
  name: 'contention',
  describe: 'bursts of 400 creates at once for 100 machines of one type: how fast each answers, and what it says',
  // A fresh site per burst.
  dynamodb: { serves: 'the contention sites', sitesOneAfterAnother: true },
  section: 'create_contention',
  options: (env) => ({
    machines: envInt(env, 'BENCH_CONTENTION_MACHINES', defaultContentionOptions.machines),
    requests: envInt(env, 'BENCH_CONTENTION_REQUESTS', defaultContentionOptions.requests),
    rounds: envInt(env, 'BENCH_CONTENTION_BURSTS', defaultContentionOptions.rounds),
    warmupRounds: envInt(env, 'BENCH_CONTENTION_WARMUP_BURSTS', defaultContentionOptions.warmupRounds, 0),
    containerRounds: envInt(env, 'BENCH_CONTENTION_CONTAINER_BURSTS', defaultContentionOptions.containerRounds, 0),
  }),
  run: (context, options) => contentionBench(dynamoOf(context), context.id, options, context.progress),
  summaryKey: 'create_contention',
  summarize: (contention) => ({
    unit: 'ms (p50, p99 of every create answer); answers by outcome',
    machines: contention.config.machines,
    requests_per_burst: contention.config.requests_per_burst,
    bursts: contention.config.bursts,
    p50_ms: contention.latency.all.median,
    p99_ms: contention.latency.all.p99,
    goal_p99_ms: contention.goal.goal,
    ratio_p99_over_goal: contention.goal.ratio,
    outcomes: contention.outcomes,
    one_org_with_quota_p99_ms: contention.one_org_with_quota.latency.all.p99,
    an_org_each_p99_ms: contention.an_org_each.latency.all.p99,
    ratio_one_org_over_an_org_each: contention.one_org_against_floor.value,
    goal_ratio: contention.one_org_against_floor.goal,
    exactly_the_free_machines_won: contention.one_org_against_floor.exactly_the_free_machines_won,
    dynamodb_requests_per_create: contention.dynamodb_requests_per_create.value,
    no_machine_twice: contention.no_machine_twice,
    warmup: contention.warmup
      ? { p50_ms: contention.warmup.latency.all.median, p99_ms: contention.warmup.latency.all.p99, no_machine_twice: contention.warmup.no_machine_twice }
      : 'not run',
    container_per_request: contention.container_per_request
      ? {
          p50_ms: contention.container_per_request.latency.all.median,
          p99_ms: contention.container_per_request.latency.all.p99,
          dynamodb_requests_per_create: contention.container_per_request.dynamodb_requests_per_create.value,
          no_machine_twice: contention.container_per_request.no_machine_twice,
          answered_5xx: contention.container_per_request.answered_5xx,
        }
      : 'not run',
  }),
});
