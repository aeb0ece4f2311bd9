import { ratio, round, type Cost } from './stats.ts';

// The workflow-cost part's figures: which workflows it measures, the baseline each is judged against, what one trial
// records, and the summary of a workflow's trials (medians, spreads and the goal's ratio).

export type Workflow = 'create_to_ready' | 'release_to_clean' | 'member_replacement';
export const WORKFLOWS: readonly Workflow[] = ['create_to_ready', 'release_to_clean', 'member_replacement'];

/**
 * "Today's figure" of the requirement: DynamoDB requests per workflow measured before the reconciler registry
 * (commit 1341d3a), every request until the site went quiet, median of 5. Capacity units were not recorded then.
 */
export const BASELINE_REQUESTS: Record<Workflow, number> = { create_to_ready: 19, release_to_clean: 31, member_replacement: 161 };
/** The requirement: each figure at most half of today's. */
export const GOAL_SHARE = 0.5;

export interface WorkflowSample {
  ms: number;
  total: Cost;
  by_source: { call: Cost; agent: Cost; reactions: Cost };
  stream_batches: number;
  /** Entities that committed more than once within one stream batch: `kind#id` → passes, per batch. */
  reconciled_more_than_once: Array<{ batch: number; entity: string; passes: number }>;
  /** Items read (GetItem) more than once within one stream batch. */
  read_more_than_once: Array<{ batch: number; key: string; reads: number }>;
}

const requestCount = (cost: Cost) => Object.values(cost.requests).reduce((a, b) => a + b, 0);
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const spread = (values: number[]) => ({ median: round(median(values)), min: round(Math.min(...values)), max: round(Math.max(...values)) });

export function summarizeWorkflow(workflow: Workflow, samples: WorkflowSample[]) {
  const requestsOf = samples.map((s) => requestCount(s.total));
  const med = median(requestsOf);
  const goal = BASELINE_REQUESTS[workflow] * GOAL_SHARE;
  const commands = new Set(samples.flatMap((s) => Object.keys(s.total.requests)));
  const bySource = (source: keyof WorkflowSample['by_source']) => ({
    requests: spread(samples.map((s) => requestCount(s.by_source[source]))),
    read_units: spread(samples.map((s) => s.by_source[source].readUnits)),
    write_units: spread(samples.map((s) => s.by_source[source].writeUnits)),
  });
  return {
    trials: samples.length,
    requests: { unit: 'DynamoDB requests, call until quiet', ...spread(requestsOf) },
    read_units: { unit: "read capacity units (DynamoDB Local's ConsumedCapacity)", ...spread(samples.map((s) => s.total.readUnits)) },
    write_units: { unit: "write capacity units (DynamoDB Local's ConsumedCapacity)", ...spread(samples.map((s) => s.total.writeUnits)) },
    requests_by_command: {
      unit: 'DynamoDB requests by command, median of the trials',
      ...Object.fromEntries([...commands].sort().map((c) => [c, round(median(samples.map((s) => s.total.requests[c] ?? 0)))])),
    },
    by_source: {
      unit:
        "call: the request that starts the workflow; agent: the site agent's reports " +
        'through the API; reactions: the stream handler (and the sweep, if it ticked)',
      call: bySource('call'),
      agent: bySource('agent'),
      reactions: bySource('reactions'),
    },
    stream_batches: spread(samples.map((s) => s.stream_batches)),
    ms: { unit: 'ms, call until quiet (includes the quiet wait)', ...spread(samples.map((s) => s.ms)) },
    goal: {
      unit: 'DynamoDB requests (median); ratio = median / goal',
      baseline: BASELINE_REQUESTS[workflow],
      value: round(med),
      goal,
      ratio: ratio(med, goal),
      meets_goal: med <= goal,
    },
    capacity_goal: { read_units: null, write_units: null, note: 'no baseline: capacity units were not recorded before the reconciler registry' },
    reconciled_more_than_once: samples.flatMap((s, trial) => s.reconciled_more_than_once.map((r) => ({ trial, ...r }))),
    read_more_than_once: samples.flatMap((s, trial) => s.read_more_than_once.map((r) => ({ trial, ...r }))),
    samples: samples.map((s) => ({
      requests: requestCount(s.total),
      read_units: round(s.total.readUnits),
      write_units: round(s.total.writeUnits),
      by_command: s.total.requests,
    })),
  };
}
