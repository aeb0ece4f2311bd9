import { randomSeed, switchSeed, switchWords } from '#local/env-switch.ts';
import { seededRandom } from '#local/stream-chaos.ts';

/**
 * FLEETWARD_AWS_SEMANTICS: what AWS does and DynamoDB Local does not, switched on for the local site. A comma list
 * of modes, or `all`; FLEETWARD_AWS_SEMANTICS_SEED replays a run. Only the modes in `EMULATED` exist so far: `all`
 * turns those on and says which it leaves out, and naming one of the others is an error rather than a silent no-op.
 */
export const AWS_SEMANTICS_MODES = ['index-lag', 'throttle', 'parallel-shards', 'lambda-timeouts', 'overlapping-sweeps'] as const;
export type AwsSemanticsMode = (typeof AWS_SEMANTICS_MODES)[number];
export const EMULATED: readonly AwsSemanticsMode[] = ['throttle', 'overlapping-sweeps'];

/** The share of DynamoDB calls the `throttle` mode fails, as a busy table in AWS might. */
export const DEFAULT_THROTTLE_SHARE = 0.02;

export interface AwsSemanticsConfig {
  modes: AwsSemanticsMode[];
  seed: number;
  throttleShare: number;
}

export class AwsSemanticsConfigError extends Error {
  override name = 'AwsSemanticsConfigError';
}

/** Undefined when the switch is off; throws AwsSemanticsConfigError on a mode it does not know or cannot emulate yet. */
export function parseAwsSemantics(env: Record<string, string | undefined>, pickSeed: () => number = randomSeed): AwsSemanticsConfig | undefined {
  const words = switchWords(env, 'FLEETWARD_AWS_SEMANTICS');
  if (words.length === 0) return undefined;
  const all = words.includes('all');
  const unknown = words.filter((word) => word !== 'all' && !(AWS_SEMANTICS_MODES as readonly string[]).includes(word));
  if (unknown.length > 0) {
    throw new AwsSemanticsConfigError(`FLEETWARD_AWS_SEMANTICS: unknown ${unknown.join(', ')}; use all, or any of ${AWS_SEMANTICS_MODES.join(', ')}`);
  }
  const notYet = all ? [] : words.filter((word) => !(EMULATED as readonly string[]).includes(word));
  if (notYet.length > 0) {
    throw new AwsSemanticsConfigError(`FLEETWARD_AWS_SEMANTICS: ${notYet.join(', ')} not emulated yet; the local site emulates ${EMULATED.join(', ')}`);
  }
  const seed = switchSeed(env, 'FLEETWARD_AWS_SEMANTICS', pickSeed, (message) => new AwsSemanticsConfigError(message));
  return { modes: all ? [...EMULATED] : [...new Set(words as AwsSemanticsMode[])], seed, throttleShare: DEFAULT_THROTTLE_SHARE };
}

/** The seeded random source of one mode, so switching another mode on does not change this one's draws. */
export const randomFor = (config: AwsSemanticsConfig, mode: AwsSemanticsMode) => seededRandom(config.seed + AWS_SEMANTICS_MODES.indexOf(mode));
