import type { Env } from './part.ts';

/** An integer from the environment, at least `min` (1 unless told), or the fallback. */
export function envInt(env: Env, name: string, fallback: number, min = 1): number {
  const raw = env[name];
  const value = Number(raw);
  return raw !== undefined && raw.trim() !== '' && Number.isInteger(value) && value >= min ? value : fallback;
}

/** A comma-separated list from the environment, blanks left out. */
export function envList(env: Env, name: string): string[] {
  return (env[name] ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}
