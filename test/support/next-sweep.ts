import type { RunnerCounters } from '#local/runner-counters.ts';

/**
 * Resolves once a sweep that began after this call has finished, as the runner's counters tell it. Runs never
 * overlap, so the run numbered one past those begun so far is one that begins after the call.
 */
export async function nextSweepDone(counters: () => RunnerCounters | Promise<RunnerCounters>, withinMs: number): Promise<void> {
  const next = (await counters()).sweeps.started + 1;
  const deadline = Date.now() + withinMs;
  while ((await counters()).sweeps.completed < next) {
    if (Date.now() > deadline) throw new Error(`no sweep began and finished within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
