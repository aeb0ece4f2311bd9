import { HEAT_GOAL_WCU_PER_S, hottestByFamily, type HotKey } from '../partition-heat.ts';
import { definePart, type PartResults } from '../part.ts';
import { ratio } from '../stats.ts';
import { heartbeatPart } from './heartbeat.ts';
import { scalePart } from './scale.ts';

const byHeat = (a: HotKey, b: HotKey) => b.wcu_per_s - a.wcu_per_s;

/**
 * The hottest partition keys of registration and the first roster (the heartbeat part, at full speed) and of the
 * whole scale soak (the local runner), measured and modelled at 100,000 machines (bench/partition-heat.ts).
 */
function partitionHeat(results: PartResults) {
  const measured = { heartbeat: results.get(heartbeatPart)!.partition_heat, scale: results.get(scalePart)!.partition_heat };
  const both = Object.values(measured);
  const hottest = both.flatMap((heat) => heat.hottest).sort(byHeat);
  const modelled = both.flatMap((heat) => heat.modelled_100k_hottest).sort(byHeat);
  const max = hottest[0]?.wcu_per_s ?? 0;
  const modelledMax = modelled[0]?.wcu_per_s ?? 0;
  return {
    unit: both[0]!.unit,
    max_wcu_per_s: max,
    modelled_100k_max_wcu_per_s: modelledMax,
    hottest: hottest.slice(0, 10),
    modelled_100k_hottest: modelled.slice(0, 10),
    modelled_100k_hottest_by_family: hottestByFamily(both.flatMap((heat) => heat.modelled_100k_hottest_by_family)),
    goal_wcu_per_s: HEAT_GOAL_WCU_PER_S,
    ratio: ratio(Math.max(max, modelledMax), HEAT_GOAL_WCU_PER_S),
    meets_goal: max <= HEAT_GOAL_WCU_PER_S && modelledMax <= HEAT_GOAL_WCU_PER_S,
    machines: { heartbeat: measured.heartbeat.machines, scale: measured.scale.machines },
    model: both[0]!.model,
  };
}

export const partitionHeatPart = definePart({
  name: 'heat',
  describe: "the hottest partition keys' write units per second, from the heartbeat's and the scale soak's streams, and modelled at 100,000 machines",
  reads: [heartbeatPart.name, scalePart.name],
  options: () => ({}),
  run: (context) => partitionHeat(context.results),
  summaryKey: 'partition_heat',
  summarize: (result) => result,
});
