import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// The formatter keeps code within 160 columns but cannot break a string or a comment: this holds those too.
const LINE_LIMIT = 160;
const root = join(import.meta.dirname, '../..');
const GENERATED = new Set(['client/api-types.ts']);

describe('source lines', () => {
  it(`are at most ${LINE_LIMIT} characters, in every tracked source file`, () => {
    const files = execFileSync('git', ['ls-files', '*.ts', '*.js'], { cwd: root, encoding: 'utf8' })
      .split('\n')
      .filter((file) => file && !GENERATED.has(file) && !file.startsWith('web/vendor/'));
    const long = files.flatMap((file) =>
      readFileSync(join(root, file), 'utf8')
        .split('\n')
        .flatMap((line, i) => (line.length > LINE_LIMIT ? [`${file}:${i + 1} (${line.length})`] : [])),
    );
    expect(long).toEqual([]);
  });
});
