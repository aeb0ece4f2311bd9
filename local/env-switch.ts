/**
 * How the local site's test switches read the environment (FLEETWARD_STREAM_CHAOS, FLEETWARD_AWS_SEMANTICS): a comma
 * list of words, and a seed that replays a run (`<NAME>_SEED`), picked at random when not given.
 */

export const MAX_SEED = 2 ** 32 - 1;

export const randomSeed = () => Math.floor(Math.random() * MAX_SEED);

/** The switch's words, trimmed; none when it is unset or blank. */
export function switchWords(env: Record<string, string | undefined>, name: string): string[] {
  return (env[name] ?? '')
    .split(',')
    .map((word) => word.trim())
    .filter(Boolean);
}

/** `<name>_SEED`, or `pickSeed()` when unset; a value that is not an integer from 0 to MAX_SEED is `refuse`d. */
export function switchSeed(env: Record<string, string | undefined>, name: string, pickSeed: () => number, refuse: (message: string) => Error): number {
  const text = env[`${name}_SEED`]?.trim();
  const seed = text ? Number(text) : pickSeed();
  if (!Number.isInteger(seed) || seed < 0 || seed > MAX_SEED) throw refuse(`${name}_SEED: expected an integer from 0 to ${MAX_SEED}, got "${text}"`);
  return seed;
}
