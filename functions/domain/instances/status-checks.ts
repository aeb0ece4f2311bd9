// When the outcome of a call to the site agent is lost (its answer, or the cleanup report it posts later), the
// controller asks the agent where the instance stands instead of guessing: GET {agent}/instances/{name}. The
// questions back off, so an agent that is slow to clean up is not hammered.

/** The agent's answer about one instance, as the decisions see it. */
export type InstanceStatusOutcome = { kind: 'present' } | { kind: 'cleaning' } | { kind: 'absent' } | { kind: 'error'; reason: string };

const FIRST_DELAY_MS = 30_000;
const MAX_DELAY_MS = 10 * 60_000;

/** How long after the `check`-th question (1-based) to ask again, unless an answer settled it: 30 s, doubling, up to 10 min. */
export function statusCheckDelayMs(check: number): number {
  return Math.min(FIRST_DELAY_MS * 2 ** Math.max(0, check - 1), MAX_DELAY_MS);
}
