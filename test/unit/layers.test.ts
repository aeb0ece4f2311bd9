import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// The layers of functions/, bottom first: a module may import its own layer and the layers below it, never one
// above. config and site (the site agent's contract, client and signing) are the floor everything stands on.
const LAYERS = [['config', 'site'], ['domain'], ['store'], ['runtime'], ['reconcilers'], ['services'], ['http'], ['handlers']];
const rankOf = new Map(LAYERS.flatMap((names, rank) => names.map((name) => [name, rank] as const)));
const root = join(import.meta.dirname, '../..');
const functionsDir = join(root, 'functions');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

/** The folder under functions/ an import points into, or `outside` for the repository's other folders. */
function targetOf(file: string, specifier: string): string | undefined {
  if (specifier.startsWith('#')) {
    const [alias] = specifier.slice(1).split('/');
    return rankOf.has(alias!) ? alias : `outside (${specifier})`;
  }
  if (!specifier.startsWith('.')) return undefined;
  const path = relative(functionsDir, normalize(join(dirname(file), specifier)));
  return path.startsWith('..') ? `outside (${specifier})` : path.split('/')[0];
}

const IMPORT = /(?:^|\s)(?:import|export)\s[^'"]*?from\s*'([^']+)'|import\s*\(\s*'([^']+)'\s*\)|^import\s+'([^']+)'/g;

/** Every import in functions/ that points up the layers, or out of functions/, as `file:line`. */
function upwardImports(): string[] {
  const found: string[] = [];
  for (const file of sourceFiles(functionsDir)) {
    const layer = relative(functionsDir, file).split('/')[0]!;
    const rank = rankOf.get(layer);
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        for (const match of line.matchAll(IMPORT)) {
          const target = targetOf(file, match[1] ?? match[2] ?? match[3]!);
          if (target === undefined || target === layer) continue;
          const targetRank = rankOf.get(target);
          if (rank === undefined || targetRank === undefined || targetRank > rank) {
            found.push(`${relative(root, file)}:${i + 1} (${layer}) imports ${target}`);
          }
        }
      });
  }
  return found;
}

describe('the layers of functions/', () => {
  it('point one way: no module imports a layer above its own, or anything outside functions/', () => {
    expect(upwardImports()).toEqual([]);
  });

  it('every folder of functions/ is a known layer', () => {
    const folders = readdirSync(functionsDir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    expect(folders.filter((name) => !rankOf.has(name))).toEqual([]);
  });
});
