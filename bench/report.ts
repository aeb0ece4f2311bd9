import { execFileSync } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import type { AnyPart, PartResults } from './part.ts';
import { round } from './stats.ts';

// The run's one JSON document: when, where and on which code it ran, each part's summary and whole result.

export const loadAverage = () => loadavg().map((x) => round(x, 2));

/** Which code is measured: the commit, and how many files differ from it (stored results aside: they are output). */
export function gitState(): { commit: string; changed_files: number } | null {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const changed = git('status', '--porcelain', '--', '.', ':(exclude)bench/results')
      .split('\n')
      .filter((line) => line.trim() !== '');
    return { commit: git('rev-parse', '--short', 'HEAD').trim(), changed_files: changed.length };
  } catch {
    return null;
  }
}

export interface RunRecord {
  /** performance.now() when the run started, the load average then, and the code it loaded (gitState). */
  startedAt: number;
  loadAtStart: number[];
  code: ReturnType<typeof gitState>;
  known: readonly AnyPart[];
  selected: readonly AnyPart[];
  results: PartResults;
  /** Wall time of each part that ran, s. */
  wall: Record<string, number>;
  /** Parts that failed, with why. */
  failed: Record<string, string>;
  /** Parts selected but not run, with why. */
  notRun: Record<string, string>;
  dynamodbLocalLeftRunning: boolean;
}

export function buildReport(run: RunRecord) {
  const ran = run.selected.filter((part) => run.results.has(part.name));
  const cpuList = cpus();
  return {
    bench: 'fleetward control plane',
    date: new Date().toISOString(),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    machine: {
      cores: cpuList.length,
      cpu_model: cpuList[0]?.model ?? 'unknown',
      memory_gib: round(totalmem() / 2 ** 30, 1),
      load_average_1_5_15min: { unit: 'runnable processes; other work on the host skews latency', at_start: run.loadAtStart, at_end: loadAverage() },
    },
    code: run.code,
    parts: {
      ran: run.selected.map((part) => part.name),
      skipped: run.known.filter((part) => !run.selected.includes(part)).map((part) => part.name),
      ...(Object.keys(run.notRun).length > 0 ? { not_run: run.notRun } : {}),
      choose_with: 'BENCH_ONLY=meta,sweep or BENCH_SKIP=api,heartbeat',
    },
    wall_time: { unit: 's', total: round((performance.now() - run.startedAt) / 1000, 1), ...run.wall },
    summary: Object.fromEntries(ran.map((part) => [part.summaryKey, part.summarize(run.results.get(part), run.results)])),
    ...Object.fromEntries(ran.filter((part) => part.section !== undefined).map((part) => [part.section!, run.results.get(part)])),
    ...(Object.keys(run.failed).length > 0 ? { failed_parts: run.failed } : {}),
    dynamodb_local_left_running: run.dynamodbLocalLeftRunning,
  };
}

export type Report = ReturnType<typeof buildReport>;
