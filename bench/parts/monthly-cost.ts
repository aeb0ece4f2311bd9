import { costEstimate } from '../cost-model.ts';
import { definePart, type PartResults } from '../part.ts';
import { heartbeatPart } from './heartbeat.ts';
import { sweepPart } from './sweep.ts';
import { workflowsPart } from './workflows.ts';

const unitsOf = (workflow: { read_units_median: number; write_units_median: number }) => ({
  readUnits: workflow.read_units_median,
  writeUnits: workflow.write_units_median,
});

/** A site's monthly AWS bill (bench/cost-model.ts) from the units the other parts measured in this run. */
function estimate(results: PartResults) {
  const workflows = results.get(workflowsPart)!;
  return costEstimate({
    createToReady: unitsOf(workflows.summary.create_to_ready),
    releaseToClean: unitsOf(workflows.summary.release_to_clean),
    memberReplacement: unitsOf(workflows.summary.member_replacement),
    idleWritesPerSecond: results.get(heartbeatPart)!.goals.idle_writes_per_second.value,
    sweepReadUnits: results.get(sweepPart)!.sweep.read_units,
  });
}

export const monthlyCostPart = definePart({
  name: 'cost',
  describe: "a site's monthly AWS bill at 1,000 and 10,000 machines, from the workflows', heartbeat's and sweep's measured units",
  reads: [workflowsPart.name, heartbeatPart.name, sweepPart.name],
  options: () => ({}),
  run: (context) => estimate(context.results),
  summaryKey: 'monthly_cost',
  summarize: (result) => result,
});
