import { randomSeed, switchSeed, switchWords } from '#local/env-switch.ts';
import { seededRandom } from '#local/stream-chaos.ts';

/**
 * FLEETWARD_AWS_SEMANTICS: what AWS does and DynamoDB Local does not, switched on for the local site. A comma list
 * of modes, or `all` (every mode); FLEETWARD_AWS_SEMANTICS_SEED replays a run.
 */
export const AWS_SEMANTICS_MODES = ['index-lag', 'throttle', 'parallel-shards', 'lambda-timeouts', 'overlapping-sweeps'] as const;
export type AwsSemanticsMode = (typeof AWS_SEMANTICS_MODES)[number];

/** The share of DynamoDB calls the `throttle` mode fails, as a busy table in AWS might. */
export const DEFAULT_THROTTLE_SHARE = 0.02;
/** How far the `index-lag` mode's reads lag the table (FLEETWARD_INDEX_LAG_MS): AWS's GSIs usually lag by less. */
export const DEFAULT_INDEX_LAG_MS = 1_000;

export interface AwsSemanticsConfig {
  modes: AwsSemanticsMode[];
  seed: number;
  throttleShare: number;
  indexLagMs: number;
}

export class AwsSemanticsConfigError extends Error {
  override name = 'AwsSemanticsConfigError';
}

/** Undefined when the switch is off; throws AwsSemanticsConfigError on a mode it does not know. */
export function parseAwsSemantics(env: Record<string, string | undefined>, pickSeed: () => number = randomSeed): AwsSemanticsConfig | undefined {
  const words = switchWords(env, 'FLEETWARD_AWS_SEMANTICS');
  if (words.length === 0) return undefined;
  const all = words.includes('all');
  const unknown = words.filter((word) => word !== 'all' && !(AWS_SEMANTICS_MODES as readonly string[]).includes(word));
  if (unknown.length > 0) {
    throw new AwsSemanticsConfigError(`FLEETWARD_AWS_SEMANTICS: unknown ${unknown.join(', ')}; use all, or any of ${AWS_SEMANTICS_MODES.join(', ')}`);
  }
  const seed = switchSeed(env, 'FLEETWARD_AWS_SEMANTICS', pickSeed, (message) => new AwsSemanticsConfigError(message));
  const modes = all ? [...AWS_SEMANTICS_MODES] : [...new Set(words as AwsSemanticsMode[])];
  return { modes, seed, throttleShare: DEFAULT_THROTTLE_SHARE, indexLagMs: indexLagOf(env) };
}

function indexLagOf(env: Record<string, string | undefined>): number {
  const text = env.FLEETWARD_INDEX_LAG_MS?.trim();
  if (!text) return DEFAULT_INDEX_LAG_MS;
  const ms = Number(text);
  if (!Number.isInteger(ms) || ms < 0) throw new AwsSemanticsConfigError(`FLEETWARD_INDEX_LAG_MS: expected a whole number of ms, got "${text}"`);
  return ms;
}

/**
 * The seeded random source of one mode, so switching another mode on does not change this one's draws; `lane`
 * parts a mode's sources (the store's client and the idempotency client each draw their own throttles).
 */
export const randomFor = (config: AwsSemanticsConfig, mode: AwsSemanticsMode, lane = 0) =>
  seededRandom(config.seed + AWS_SEMANTICS_MODES.indexOf(mode) + lane * AWS_SEMANTICS_MODES.length);
