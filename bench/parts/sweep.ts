import { envInt } from '../env.ts';
import { definePart, dynamoOf } from '../part.ts';
import { defaultSweepReadsOptions, sweepReads } from '../sweep-reads.ts';

export const sweepPart = definePart({
  name: 'sweep',
  describe: 'what the sweep reads to find its work in a 100,000-machine table, against a full Scan; how fast it clears 1,000 due',
  dynamodb: { serves: 'the sweep-reads table' },
  section: 'sweep_reads',
  options: (env) => ({
    ...defaultSweepReadsOptions,
    machines: envInt(env, 'BENCH_SWEEP_MACHINES', defaultSweepReadsOptions.machines),
    loadConcurrency: envInt(env, 'BENCH_SWEEP_LOAD_CONCURRENCY', defaultSweepReadsOptions.loadConcurrency),
    runBudgetMs: envInt(env, 'BENCH_SWEEP_RUN_BUDGET_MS', defaultSweepReadsOptions.runBudgetMs),
    agentDeleteMs: envInt(env, 'BENCH_SWEEP_AGENT_DELETE_MS', defaultSweepReadsOptions.agentDeleteMs, 0),
  }),
  run: (context, options) => sweepReads(dynamoOf(context).endpoint, context.id, options, context.progress),
  summaryKey: 'sweep_reads',
  summarize: (sweep) => ({
    unit: 'read capacity units; ratio full Scan / sweep',
    machines: sweep.config.machines,
    sweep_read_units: sweep.sweep.read_units,
    sweep_items_read: sweep.sweep.items_read,
    scan_read_units: sweep.scan.read_units,
    scan_items: sweep.scan.items,
    ratio_scan_over_sweep: sweep.ratios.scan_over_sweep,
    clear_1000_due: {
      ms: sweep.clear_backlog.ms,
      runs: sweep.clear_backlog.runs,
      reconciled: sweep.clear_backlog.reconciled,
      failed: sweep.clear_backlog.failed,
      goal: sweep.clear_backlog.goal,
    },
    load_s: sweep.load.value,
  }),
});
