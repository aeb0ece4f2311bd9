import { envInt } from '../env.ts';
import { definePart, dynamoOf } from '../part.ts';
import { defaultWorkflowCostOptions, workflowCost } from '../workflow-cost.ts';

const defaults = defaultWorkflowCostOptions;

export const workflowsPart = definePart({
  name: 'workflows',
  describe: 'DynamoDB requests and capacity units per create → Ready, release → clean and member replacement, call until quiet',
  dynamodb: { serves: 'the workflow-cost site' },
  section: 'workflow_cost',
  options: (env) => ({
    trials: envInt(env, 'BENCH_WORKFLOW_TRIALS', defaults.trials),
    warmup: envInt(env, 'BENCH_WORKFLOW_WARMUP', defaults.warmup, 0),
    sweepIntervalMs: envInt(env, 'BENCH_WORKFLOW_SWEEP_INTERVAL_MS', defaults.sweepIntervalMs),
    quietMs: envInt(env, 'BENCH_WORKFLOW_QUIET_MS', defaults.quietMs),
  }),
  run: (context, options) => workflowCost(dynamoOf(context).endpoint, context.id, options, context.progress),
  summaryKey: 'workflow_cost',
  summarize: (workflows) => ({
    unit:
      'DynamoDB requests per workflow, call until quiet (median of the trials); goal = half of the figure before the reconciler registry; ' +
      'ratio median / goal; capacity units have no baseline',
    ...workflows.summary,
  }),
});
