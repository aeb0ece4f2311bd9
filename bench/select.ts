import { envList } from './env.ts';
import type { AnyPart, Env } from './part.ts';

/**
 * The parts to run, in their order: those BENCH_ONLY names (all when it is empty) but those BENCH_SKIP names. A part
 * that derives its result from others runs whenever they all do; naming it brings them along. An unknown name is
 * refused with the list of known ones, rather than a run that quietly measures something else.
 */
export function selectParts(parts: readonly AnyPart[], env: Env): AnyPart[] {
  const known = parts.map((part) => part.name);
  const only = envList(env, 'BENCH_ONLY');
  const skip = new Set(envList(env, 'BENCH_SKIP'));
  const unknown = [...only, ...skip].filter((name) => !known.includes(name));
  if (unknown.length > 0) throw new Error(`unknown bench part(s) ${unknown.join(', ')}; known: ${known.join(', ')}`);
  const named = new Set(only.flatMap((name) => [name, ...(parts.find((part) => part.name === name)?.reads ?? [])]));
  const chosen = new Set<string>();
  for (const part of parts) {
    if (skip.has(part.name)) continue;
    const wanted = part.reads ? part.reads.every((name) => chosen.has(name)) : only.length === 0 || named.has(part.name);
    if (wanted) chosen.add(part.name);
  }
  return parts.filter((part) => chosen.has(part.name));
}
