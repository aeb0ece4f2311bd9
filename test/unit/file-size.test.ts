import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// A file a reader can hold in mind: a hand-written source file over 400 lines has more than one job, and splits by job.
const SOURCE_LIMIT = 400;
/** The store is split by aggregate (functions/store/aggregates.ts): a module past this holds more than one kind's rules. */
const STORE_LIMIT = 300;
const BENCH_README_LIMIT = 300;
const root = join(import.meta.dirname, '../..');
/** Written by a generator, not by hand (`npm run gen:client`). */
const GENERATED = new Set(['client/api-types.ts']);
const lineCount = (file: string) => readFileSync(join(root, file), 'utf8').trimEnd().split('\n').length;

/** Tracked files and new ones git does not ignore, so a file is held before its first commit too. */
function sourceFiles(): string[] {
  return execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts', '*.js', '*.mjs'], {
    cwd: root,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((file) => file && !GENERATED.has(file) && !file.startsWith('web/vendor/'))
    .filter((file) => {
      try {
        readFileSync(join(root, file));
        return true;
      } catch {
        return false; // deleted in the work tree, not yet in the index
      }
    });
}

describe('file sizes', () => {
  const sizes = new Map(sourceFiles().map((file) => [file, lineCount(file)]));

  it(`hold every hand-written source file to ${SOURCE_LIMIT} lines`, () => {
    const over = [...sizes].filter(([, lines]) => lines > SOURCE_LIMIT);
    expect(over.map(([file, lines]) => `${file} (${lines})`)).toEqual([]);
  });

  it(`hold every file of functions/store to ${STORE_LIMIT} lines`, () => {
    const over = [...sizes].filter(([file, lines]) => file.startsWith('functions/store/') && lines > STORE_LIMIT);
    expect(over.map(([file, lines]) => `${file} (${lines})`)).toEqual([]);
  });

  it(`hold bench/README.md to ${BENCH_README_LIMIT} lines`, () => {
    expect(lineCount('bench/README.md')).toBeLessThanOrEqual(BENCH_README_LIMIT);
  });
});
