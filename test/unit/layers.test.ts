import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// The layers of functions/, bottom first: a module may import its own layer and the layers below it, never one
// above. config (the site config, zod's messages) is the floor; site (the site agent's contract, client and signing)
// stands on it.
const LAYERS = [['config'], ['site'], ['domain'], ['store'], ['runtime'], ['reconcilers'], ['services'], ['http'], ['handlers']];

// The domain's capability folders, bottom first, by the same rule: a folder imports itself and the folders below.
// core holds the records, Change, the API's schemas and the rules every capability reads a machine by.
const DOMAIN_FOLDERS = ['core', 'events', 'repair', 'machines', 'instances', 'reservations', 'maintenance', 'meta-instances', 'capacity'];
const rankOf = new Map(LAYERS.flatMap((names, rank) => names.map((name) => [name, rank] as const)));
const root = join(import.meta.dirname, '../..');
const functionsDir = join(root, 'functions');
const domainDir = join(functionsDir, 'domain');

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

// Over the whole text, so an import that the formatter wraps over several lines counts too.
const IMPORT = /(?:^|\s)(?:import|export)\s[^'"]*?from\s*'([^']+)'|import\s*\(\s*'([^']+)'\s*\)|^import\s+'([^']+)'/gm;

/** Every import of a file, with the line its specifier is on. */
function importsOf(file: string): Array<{ specifier: string; line: number }> {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT)].map((match) => ({
    specifier: (match[1] ?? match[2] ?? match[3])!,
    line: text.slice(0, match.index + match[0].length).split('\n').length,
  }));
}

/** The domain folder an import points into, if it points into functions/domain. */
function domainFolderOf(file: string, specifier: string): string | undefined {
  let path: string;
  if (specifier.startsWith('#domain/')) path = specifier.slice('#domain/'.length);
  else if (specifier.startsWith('.')) path = relative(domainDir, normalize(join(dirname(file), specifier)));
  else return undefined;
  return path.startsWith('..') ? undefined : path.split('/')[0];
}

/** Every import in functions/domain that points into a folder above its own (or one not in DOMAIN_FOLDERS), as `file:line`. */
function upwardDomainImports(): string[] {
  const rank = new Map(DOMAIN_FOLDERS.map((name, i) => [name, i]));
  return sourceFiles(domainDir).flatMap((file) => {
    const folder = relative(domainDir, file).split('/')[0]!;
    return importsOf(file).flatMap(({ specifier, line }) => {
      const target = domainFolderOf(file, specifier);
      if (target === undefined || target === folder) return [];
      const [from, to] = [rank.get(folder), rank.get(target)];
      return from === undefined || to === undefined || to > from ? [`${relative(root, file)}:${line} (${folder}) imports ${target}`] : [];
    });
  });
}

/** Every import in functions/ that points up the layers, or out of functions/, as `file:line`. */
function upwardImports(): string[] {
  return sourceFiles(functionsDir).flatMap((file) => {
    const layer = relative(functionsDir, file).split('/')[0]!;
    const rank = rankOf.get(layer);
    return importsOf(file).flatMap(({ specifier, line }) => {
      const target = targetOf(file, specifier);
      if (target === undefined || target === layer) return [];
      const targetRank = rankOf.get(target);
      return rank === undefined || targetRank === undefined || targetRank > rank ? [`${relative(root, file)}:${line} (${layer}) imports ${target}`] : [];
    });
  });
}

describe('the layers of functions/', () => {
  it('point one way: no module imports a layer above its own, or anything outside functions/', () => {
    expect(upwardImports()).toEqual([]);
  });

  it("the domain's folders point one way: none imports a folder above its own", () => {
    expect(upwardDomainImports()).toEqual([]);
  });

  it('every file of functions/domain sits in one of its known folders', () => {
    const entries = readdirSync(domainDir, { withFileTypes: true });
    expect(entries.filter((e) => !e.isDirectory()).map((e) => e.name)).toEqual([]);
    expect(entries.map((e) => e.name).sort()).toEqual([...DOMAIN_FOLDERS].sort());
  });

  it('every folder of functions/ is a known layer', () => {
    const folders = readdirSync(functionsDir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    expect(folders.filter((name) => !rankOf.has(name))).toEqual([]);
  });
});
