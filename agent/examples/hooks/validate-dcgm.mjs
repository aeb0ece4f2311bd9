#!/usr/bin/env node
// Example validate hook: DCGM's diagnostic at the level the suite names (`dcgmi diag -r <level> -j`, run on the
// machine through DCGM_DIAG_COMMAND), printed as one line per test, which the agent reports as the validation's
// results (docs/agent.md "Hooks"). Exit 0 only when every test passed.
//   DCGM_DIAG_COMMAND  how to run it on the machine; `{level}` is replaced (default: ssh <machine> dcgmi diag -r {level} -j)
//   DCGM_LEVEL         1 quick, 2 medium, 3 long, 4 extended (default: from the suite name's last digit, else 2)
import { execSync } from 'node:child_process';

const machine = process.env.FLEETWARD_MACHINE_ID;
const level = process.env.DCGM_LEVEL ?? /(\d)$/.exec(process.env.FLEETWARD_SUITE ?? '')?.[1] ?? '2';
const command = (process.env.DCGM_DIAG_COMMAND ?? `ssh -o BatchMode=yes ${machine} dcgmi diag -r {level} -j`).replaceAll('{level}', level);

/** @type {any} What dcgmi printed: JSON whose shape DCGM documents, read loosely. */
let report;
try {
  report = JSON.parse(execSync(command, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }));
} catch (caught) {
  // dcgmi exits non-zero when a test fails, with the report on stdout all the same.
  const error = /** @type {{ stdout?: string, message: string }} */ (caught);
  const said = error.stdout ?? '';
  try {
    report = JSON.parse(said);
  } catch {
    console.log(`dcgmi diag -r ${level} gave no report: ${String(error.message).split('\n')[0]}`);
    process.exit(1);
  }
}

// DCGM's JSON: categories of tests, each test with a result per GPU ("Pass", "Fail", "Warn", "Skip").
const categories = report['DCGM GPU Diagnostic']?.test_categories ?? [];
let allPassed = categories.length > 0;
for (const category of categories) {
  for (const test of category.tests ?? []) {
    /** @type {any[]} */
    const results = test.results ?? [];
    const failed = results.filter((r) => r.status === 'Fail');
    const passed = failed.length === 0;
    allPassed &&= passed;
    const message = failed.map((r) => `GPU ${r.gpu_id ?? '?'}: ${r.warnings?.[0]?.warning ?? r.info ?? 'failed'}`).join('; ');
    console.log(JSON.stringify({ test: `dcgm-r${level}: ${test.name}`, passed, ...(passed ? {} : { message: message.slice(0, 1024) }) }));
  }
}
process.exit(allPassed ? 0 : 1);
