import { envInt } from '../env.ts';
import { definePart, dynamoOf } from '../part.ts';
import { defaultSummaryReadOptions, summaryRead } from '../summary-read.ts';

const defaults = defaultSummaryReadOptions;

export const summaryPart = definePart({
  name: 'summary',
  describe: 'the fleet summary read at 10,000 machines, against a 50-machine page of GET /admin/machines on the same site',
  dynamodb: { serves: 'the summary site' },
  section: 'summary_read',
  options: (env) => ({
    machines: envInt(env, 'BENCH_SUMMARY_MACHINES', defaults.machines),
    samples: envInt(env, 'BENCH_SUMMARY_SAMPLES', defaults.samples),
    warmup: envInt(env, 'BENCH_SUMMARY_WARMUP', defaults.warmup, 0),
  }),
  run: (context, options) => summaryRead(dynamoOf(context).endpoint, context.id, options, context.progress),
  summaryKey: 'fleet_summary_read',
  summarize: (result) => ({
    unit: 'ms (medians); bytes (answer bodies)',
    machines: result.config.machines,
    summary_median: result.summary.latency.median,
    machine_page_median: result.machine_page.latency.median,
    ratio_to_machine_page: result.ratio_to_machine_page,
    goal_ratio: result.goal_ratio,
    meets_goal: result.meets_goal,
    summary_bytes: result.summary.bytes,
    machine_page_bytes: result.machine_page.bytes,
    summary_with_domains_median: result.summary_with_domains.latency.median,
    summary_with_domains_bytes: result.summary_with_domains.bytes,
  }),
});
