import { COLDSTART_GOAL_MS, coldstartBench, defaultColdstartOptions } from '../coldstart.ts';
import { envInt } from '../env.ts';
import { definePart, dynamoOf } from '../part.ts';

export const coldstartPart = definePart({
  name: 'coldstart',
  describe: 'every synthesized Lambda bundle imported and invoked once in a fresh process, against a bare-SDK floor',
  dynamodb: { serves: 'the cold starts' },
  section: 'coldstart',
  options: (env) => ({ runs: envInt(env, 'BENCH_COLDSTART_RUNS', defaultColdstartOptions.runs) }),
  run: (context, options) => coldstartBench(dynamoOf(context).endpoint, context.id, options, context.progress),
  summaryKey: 'coldstart',
  summarize: (coldstart) => ({
    unit: "ms, import + first invoke in a fresh process (median); goal and ratio median / goal; ratio_to_floor median / the bare-SDK floor's",
    goal_ms: COLDSTART_GOAL_MS,
    floor_median: coldstart.floor.import_and_first_invoke.median,
    ...Object.fromEntries(
      Object.entries(coldstart.functions).map(([name, figures]) => [
        name,
        {
          median: figures.import_and_first_invoke.median,
          ratio: figures.import_and_first_invoke.ratio_to_goal,
          ratio_to_floor: figures.ratio_to_floor,
          cpu_median: figures.cpu.import_and_first_invoke.median,
          bundle_kib: figures.bundle_kib,
        },
      ]),
    ),
  }),
});
