import { describe, expect, it } from 'vitest';
import { PartResults } from '../../bench/part.ts';
import { workflowsPart } from '../../bench/parts/workflows.ts';
import { WORKFLOWS } from '../../bench/workflow-summary.ts';
import { benchContext } from '../support/bench-context.ts';

// The workflows bench part with one trial and no warm-up, so that what it measures keeps working between full runs
// (npm run bench). Only the document's shape and that every figure was counted are checked here: the goals (half
// of the requests before the reconciler registry) are the bench's to judge, over its trials.

const positive = (value: unknown) => typeof value === 'number' && Number.isFinite(value) && value > 0;

describe('bench workflows part with one trial', () => {
  it('counts requests and capacity units for create → Ready, release → clean and a member replacement, each with its goal', async () => {
    const result = await workflowsPart.run(benchContext(), workflowsPart.options({ BENCH_WORKFLOW_TRIALS: '1', BENCH_WORKFLOW_WARMUP: '0' }));
    for (const workflow of WORKFLOWS) {
      const figures = result.workflows[workflow];
      expect(figures.trials, workflow).toBe(1);
      const counted = [figures.requests.median, figures.read_units.median, figures.write_units.median];
      for (const figure of [...counted, figures.by_source.call.requests.median, figures.by_source.reactions.requests.median]) {
        expect(positive(figure), `${workflow}: ${JSON.stringify(figures)}`).toBe(true);
      }
      // Every request is counted once, by command and by who sent it.
      const byCommand = Object.entries(figures.requests_by_command)
        .filter(([name]) => name !== 'unit')
        .reduce((sum, [, n]) => sum + Number(n), 0);
      expect(byCommand, workflow).toBe(figures.requests.median);
      const bySource = figures.by_source.call.requests.median + figures.by_source.agent.requests.median + figures.by_source.reactions.requests.median;
      expect(bySource, workflow).toBe(figures.requests.median);
      expect(figures.stream_batches.median, workflow).toBeGreaterThan(0);
      expect(figures.goal.goal).toBe(figures.goal.baseline / 2);
      expect(figures.goal.ratio).toBeCloseTo(figures.goal.value / figures.goal.goal, 2);
      expect(typeof figures.goal.meets_goal).toBe('boolean');
      expect(result.summary[workflow]).toMatchObject({ requests_median: figures.requests.median, goal: figures.goal.goal, ratio: figures.goal.ratio });
    }
    expect(workflowsPart.summarize(result, new PartResults())).toMatchObject(result.summary);
  }, 120_000);
});
