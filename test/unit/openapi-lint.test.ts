import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { apiOpenApiDocument } from '#lib/api-routes.ts';

// The document `GET /openapi.json` serves, as a consumer's tooling reads it: linted by Redocly CLI (the pinned
// devDependency, run offline) with its recommended rules.

/** Warnings the document keeps on purpose, by rule, each with its reason; any other warning fails the test. */
const ACCEPTED_WARNINGS: Record<string, string> = {
  'info-license': 'the project states no license (package.json names none), so neither does its API description',
};

interface LintProblem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: Array<{ pointer?: string }>;
}

const redoclyCli = createRequire(import.meta.url).resolve('@redocly/cli/bin/cli.js');

/** Redocly's report on `document`, linted in a directory of its own so that no project config file applies. */
function lint(document: object): LintProblem[] {
  const dir = mkdtempSync(join(tmpdir(), 'fleetward-openapi-lint-'));
  try {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(document, null, 2));
    const result = spawnSync(process.execPath, [redoclyCli, 'lint', '--extends=recommended', '--format=json', file], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 60_000,
      // No telemetry and no update check: the test runs offline.
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    });
    if (!result.stdout) throw new Error(`redocly lint gave no report (exit ${result.status}): ${result.stderr || result.error}`);
    return (JSON.parse(result.stdout) as { problems: LintProblem[] }).problems;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const shown = (problem: LintProblem) => `${problem.ruleId} at ${problem.location[0]?.pointer ?? '#'}: ${problem.message}`;

describe('the served OpenAPI document', () => {
  it("passes Redocly's recommended rules: no error, and only the warnings accepted above", () => {
    const problems = lint(apiOpenApiDocument());
    expect(problems.filter((problem) => problem.severity === 'error').map(shown), 'redocly lint errors').toEqual([]);
    const warnings = problems.filter((problem) => problem.severity !== 'error');
    expect(
      warnings.filter((problem) => !(problem.ruleId in ACCEPTED_WARNINGS)).map(shown),
      'redocly lint warnings: fix them, or accept them in ACCEPTED_WARNINGS with the reason',
    ).toEqual([]);
    // An accepted warning that no longer appears is taken off the list.
    expect(new Set(warnings.map((problem) => problem.ruleId))).toEqual(new Set(Object.keys(ACCEPTED_WARNINGS)));
  });
});
