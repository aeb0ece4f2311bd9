// The example validate hook (agent/examples/hooks/validate-dcgm.mjs) on DCGM diagnostic reports: one line per test,
// which the agent turns into the validation report, and an exit status that says whether all passed.

import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { validationReportOf } from '#agent/operations/machine-work.ts';
import { REPO_ROOT } from './support/agent-process.ts';

function runValidateHook(report: string, suite: string) {
  const run = spawnSync(process.execPath, [join(REPO_ROOT, 'agent/examples/hooks/validate-dcgm.mjs')], {
    env: { ...process.env, FLEETWARD_MACHINE_ID: 'gb200-r1-01', FLEETWARD_SUITE: suite, DCGM_DIAG_COMMAND: `echo level {level} >&2; cat ${report}` },
    encoding: 'utf8',
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('the example DCGM validate hook', () => {
  it('reports each DCGM test, failing the one a GPU failed, with DCGM’s warning; exits 1', () => {
    const run = runValidateHook(join(import.meta.dirname, 'fixtures/dcgm-diag-r2-fail.json'), 'return-to-service-2');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('level 2');
    const report = validationReportOf('v-1', 'return-to-service-2', {
      ok: false,
      message: '',
      outcome: { code: 1, timedOut: false, stdout: run.stdout, stderr: '' },
    });
    expect(report).toEqual({
      validationId: 'v-1',
      passed: false,
      results: [
        { test: 'dcgm-r2: Denylist', passed: true },
        { test: 'dcgm-r2: Page Retirement/Row Remap', passed: true },
        { test: 'dcgm-r2: PCIe', passed: false, message: 'GPU 1: GPU 1 PCIe link width x8 is below the expected x16' },
        { test: 'dcgm-r2: GPU Memory', passed: true },
      ],
    });
  });

  it('passes the local site’s sample: a suite name without a level runs level 2', () => {
    const run = runValidateHook(join(REPO_ROOT, 'agent/examples/local/dcgm-diag-r1.json'), 'standard');
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('level 2');
    expect(run.stdout.trim().split('\n')).toHaveLength(9);
  });

  it('a DCGM that prints no report fails the validation with what happened', () => {
    const run = runValidateHook('/nonexistent/report.json', 'standard');
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^dcgmi diag -r 2 gave no report: /);
  });
});
