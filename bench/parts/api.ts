import { MACHINE_TYPE, API_MACHINES, ORG, TENANT, startApiBench, type ApiCycle } from '../api.ts';
import { apiReport } from '../api-report.ts';
import { envInt } from '../env.ts';
import { startFloor, type FloorCycle } from '../floor.ts';
import { definePart, dynamoOf } from '../part.ts';
import { summarize } from '../stats.ts';

/** Progress is reported every this many rounds. */
const PROGRESS_EVERY = 50;

export const apiPart = definePart({
  name: 'api',
  describe: 'create and release through the local HTTP API, against the contract floor of each',
  dynamodb: { serves: 'the API site and the floor' },
  section: 'api',
  options: (env) => ({
    /** Measured rounds (one create and one release each) on each side. */
    samples: envInt(env, 'BENCH_SAMPLES', 200),
    apiWarmup: envInt(env, 'BENCH_API_WARMUP', 20),
    floorWarmup: envInt(env, 'BENCH_FLOOR_WARMUP', 60),
    settleMs: envInt(env, 'BENCH_SETTLE_MS', 10, 0),
  }),

  async run(context, options) {
    const { endpoint } = dynamoOf(context);
    const { id, progress } = context;
    progress(`api: ${options.samples} rounds per side`);
    const api = await startApiBench(endpoint, id, options.settleMs, progress);
    try {
      progress(`site on ${api.site.url} with ${API_MACHINES} ${MACHINE_TYPE} machines; warming up (${options.apiWarmup} create/release rounds)`);
      for (let i = 0; i < options.apiWarmup; i++) await api.cycle();
      // Seeded from the warmed-up site's own items, so both sides read and write items of the same size.
      const { settleMs } = options;
      const floor = await startFloor({ endpoint, id, siteTable: api.tableName, machineType: MACHINE_TYPE, org: ORG, actor: TENANT, settleMs });
      try {
        progress(`floor table ${floor.tableName} seeded with ${floor.seeded.machines} machines; warming up (${options.floorWarmup} rounds)`);
        for (let i = 0; i < options.floorWarmup; i++) await floor.cycle();
        // API and floor rounds alternate, so load from elsewhere on the host falls on both alike; which of the two
        // goes first in a pair is drawn at random, so neither always follows the other.
        const apiCycles: ApiCycle[] = [];
        const floorCycles: FloorCycle[] = [];
        for (let i = 0; i < options.samples; i++) {
          if (Math.random() < 0.5) {
            apiCycles.push(await api.cycle());
            floorCycles.push(await floor.cycle());
          } else {
            floorCycles.push(await floor.cycle());
            apiCycles.push(await api.cycle());
          }
          if ((i + 1) % PROGRESS_EVERY === 0 || i + 1 === options.samples) progress(roundsLine(i + 1, options.samples, apiCycles, floorCycles));
        }
        return apiReport(apiCycles, floorCycles, options);
      } finally {
        await floor.stop();
      }
    } finally {
      await api.stop();
    }
  },

  summaryKey: 'api_over_floor',
  summarize: (result) => ({
    unit: 'ratio (API latency / contract floor latency), medians',
    create: result.ratios.create_median,
    release: result.ratios.release_median,
  }),
});

type Cycle = ApiCycle | FloorCycle;

function roundsLine(done: number, samples: number, apiCycles: ApiCycle[], floorCycles: FloorCycle[]): string {
  const median = (cycles: Cycle[], pick: (c: Cycle) => number) => summarize(cycles.slice(-PROGRESS_EVERY).map(pick)).median;
  const create = (c: Cycle) => c.createMs;
  const release = (c: Cycle) => c.releaseMs;
  return (
    `${done}/${samples} rounds; last ${Math.min(done, PROGRESS_EVERY)} medians: ` +
    `create ${median(apiCycles, create)} ms (floor ${median(floorCycles, create)}), ` +
    `release ${median(apiCycles, release)} ms (floor ${median(floorCycles, release)})`
  );
}
