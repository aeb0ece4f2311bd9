import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { siteConfigSchema } from '#config/site-config.ts';
import { reconcilers, registry } from '#reconcilers/registry.ts';

// What the guide and the design say the code has, held to the code: the reconcilers, the record kinds the stream
// delivers, and the site config's sections. The README is the front door and stays short: a test holds its length.

const root = join(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');
const names = (text: string) => [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

/** The backticked names of the sentence that starts with `label`, up to its full stop. */
function listAfter(doc: string, label: string): string[] {
  const flat = doc.replace(/\s*\n\s*/g, ' ');
  const at = flat.indexOf(label);
  if (at < 0) throw new Error(`no "${label}" in the document`);
  const sentence = flat.slice(at + label.length, flat.indexOf('.', at + label.length));
  return names(sentence);
}

const configSections = Object.keys(siteConfigSchema.shape);

describe.each(['docs/guide.md', 'docs/design.md'])('%s', (file) => {
  const doc = read(file);
  it("lists the registry's reconcilers, in its order", () => {
    expect(listAfter(doc, 'Reconcilers (`registry.ts`):')).toEqual(reconcilers.map((r) => r.kind));
  });
  it('lists the record kinds the stream delivers', () => {
    expect(listAfter(doc, 'Record kinds they watch (what the stream delivers):').sort()).toEqual([...registry.watchedRecordKinds].sort());
  });
});

describe('the site config sections', () => {
  it("are the guide table's rows", () => {
    const rows = [...read('docs/guide.md').matchAll(/^\| `\[([a-z_]+)\]`/gm)].map((m) => m[1]);
    expect(rows.sort()).toEqual([...configSections].sort());
  });
  it("are the sections of docs/api.md's sample config", () => {
    const api = read('docs/api.md');
    const sample = api.slice(api.indexOf('## Site config'), api.indexOf('## Local runner extras'));
    const sections = [...sample.matchAll(/^\[([a-z_]+)\]/gm)].map((m) => m[1]);
    expect(sections.sort()).toEqual([...configSections].sort());
  });
});

describe('README.md', () => {
  it('is a front door of at most 200 lines, the guide linked from it', () => {
    const readme = read('README.md');
    expect(readme.split('\n').length).toBeLessThanOrEqual(200);
    expect(readme).toContain('](docs/guide.md)');
    expect(readme).toContain('npm ci && npm start');
    expect(readme).toContain('npm ci && npm test');
  });
});
