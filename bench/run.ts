// `npm run bench`: runs the bench parts (bench/parts/index.ts; BENCH_ONLY and BENCH_SKIP choose them), each on a
// DynamoDB Local of its own when it asks for one, and prints one JSON report on stdout, also stored in bench/results/.
// Progress goes to stderr. See bench/README.md.

import '#local/xray-manual-mode.ts';
import { randomUUID } from 'node:crypto';
import { cpus } from 'node:os';
import { PartDynamos } from './part-dynamo.ts';
import { PartResults, type AnyPart, type BenchContext } from './part.ts';
import { parts } from './parts/index.ts';
import { buildReport, gitState, loadAverage, type RunRecord } from './report.ts';
import { storeReport } from './results.ts';
import { selectParts } from './select.ts';
import { round } from './stats.ts';

const progress = (line: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const firstLine = (error: unknown) => (error instanceof Error ? error.message.split('\n')[0]! : String(error));
const dynamos = new PartDynamos(progress);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    progress(`${signal}: stopping`);
    void dynamos.stop().finally(() => process.exit(130));
  });
}

async function runPart(part: AnyPart, context: BenchContext): Promise<unknown> {
  const options = part.options(process.env);
  if (!part.dynamodb) return part.run(context, options);
  return dynamos.around(part.dynamodb, (local) => Promise.resolve(part.run({ ...context, dynamo: local }, options)));
}

async function main(): Promise<void> {
  const selected = selectParts(parts, process.env);
  const run: RunRecord = {
    startedAt: performance.now(),
    loadAtStart: loadAverage(),
    code: gitState(),
    known: parts,
    selected,
    results: new PartResults(),
    wall: {},
    failed: {},
    notRun: {},
    dynamodbLocalLeftRunning: false,
  };
  progress(`node ${process.version}, ${cpus().length} cores, load ${run.loadAtStart.join(' ')}; parts: ${selected.map((p) => p.name).join(', ') || 'none'}`);
  const context: BenchContext = { id: randomUUID().slice(0, 8), progress, results: run.results };
  for (const part of selected) {
    const missing = (part.reads ?? []).filter((name) => !run.results.has(name));
    if (missing.length > 0) {
      run.notRun[part.name] = `it reads ${missing.join(', ')}, which did not finish`;
      continue;
    }
    const started = performance.now();
    try {
      run.results.set(part, await runPart(part, context));
    } catch (error) {
      // The other parts' figures are still written, and the run exits non-zero.
      run.failed[part.name] = firstLine(error);
      progress(`${part.name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    } finally {
      run.wall[part.name] = round((performance.now() - started) / 1000, 1);
    }
  }
  const leftRunning = dynamos.leftRunning();
  run.dynamodbLocalLeftRunning = leftRunning.length > 0;

  const report = buildReport(run);
  const stored = storeReport(
    report,
    selected.flatMap((part) => part.section ?? []),
  );
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  const kept = stored.whole ? '' : ' (summary and configs: the whole report is over the size kept)';
  progress(`done in ${report.wall_time.total} s; written to ${stored.file}${kept}`);

  const broken = selected.flatMap((part) => (run.results.has(part.name) ? (part.failure?.(run.results.get(part)) ?? []) : []));
  if (Object.keys(run.failed).length > 0) throw new Error(`parts failed: ${Object.keys(run.failed).join(', ')} (their figures are left out)`);
  if (leftRunning.length > 0) throw new Error(`a DynamoDB Local of ours (port ${leftRunning.join(', ')}) is still running`);
  if (broken.length > 0) throw new Error(broken.join('; '));
}

try {
  await main();
} catch (error) {
  progress(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  await dynamos.stop();
  process.exitCode = 1;
}
// Sockets kept alive by fetch or the SDK must not hold the process open once everything is stopped.
process.exit();
