import type { Parameters as RunParameters } from 'fast-check';

/**
 * fast-check settings for a property: `FUZZ_RUNS` widens a run (the default keeps CI short), `FUZZ_SEED` replays
 * one. The seed is logged on every run, not only on failure (where fast-check prints it with the shrunk case).
 */
export function fuzzSettings<T>(name: string, defaultRuns: number): RunParameters<T> {
  const numRuns = Number(process.env.FUZZ_RUNS ?? defaultRuns);
  const seed = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 0x7fffffff);
  console.log(`${name}: fast-check seed ${seed}, ${numRuns} runs (replay with FUZZ_SEED=${seed})`);
  return { numRuns, seed };
}
