import type { RunnerCounters } from '#local/runner-counters.ts';

/**
 * Resolves once a sweep that began after this call has swept and finished, as the runner's counters tell it: a run
 * numbered past those begun so far began after the call (one turned away by the sweep's lease does not count).
 */
export async function nextSweepDone(counters: () => RunnerCounters | Promise<RunnerCounters>, withinMs: number): Promise<void> {
  const next = (await counters()).sweeps.started + 1;
  const deadline = Date.now() + withinMs;
  while ((await counters()).sweeps.latestSwept < next) {
    if (Date.now() > deadline) throw new Error(`no sweep began and finished within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
