import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// Every run's report is kept, committed with the code, under bench/results/: `<UTC date and time>-<commit>.json`,
// so that any figure can be followed across runs (bench/history.ts). `latest.json` holds the last run's whole
// report and is not committed (it is a copy).

export const RESULTS_DIR = join(import.meta.dirname, 'results');
export const LATEST = 'latest.json';

/** A stored report over this keeps its summary and each part's config, without the raw figures behind them. */
const STORED_BYTES_MAX = 300 * 1024;

/** What every stored report holds, whatever parts ran. */
export interface StoredReport {
  date: string;
  code: { commit: string; changed_files: number } | null;
  [key: string]: unknown;
}

/** `2026-11-27T10-15-03Z-8bf53a1.json`: sorts as the runs happened. */
export const storedName = (report: StoredReport): string =>
  `${report.date.replace(/\.\d+Z$/, 'Z').replaceAll(':', '-')}-${report.code?.commit ?? 'no-commit'}.json`;

/** The summary, the run's setting and each part's config, for a report too large to keep whole. */
function compact(report: StoredReport, sections: readonly string[]): StoredReport {
  const kept: StoredReport = { ...report };
  for (const section of sections) {
    const config = (report[section] as { config?: unknown } | undefined)?.config;
    if (config === undefined) delete kept[section];
    else kept[section] = { config };
  }
  kept.left_out = `each part's raw figures (the whole report was over ${STORED_BYTES_MAX / 1024} KB); the summary holds the judged ones`;
  return kept;
}

/** Writes the report as latest.json and as the run's own file; says where, and whether it was stored whole. */
export function storeReport(report: StoredReport, sections: readonly string[]): { file: string; whole: boolean } {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const json = `${JSON.stringify(report, null, 2)}\n`;
  writeFileSync(join(RESULTS_DIR, LATEST), json);
  const whole = Buffer.byteLength(json) <= STORED_BYTES_MAX;
  const file = join(RESULTS_DIR, storedName(report));
  writeFileSync(file, whole ? json : `${JSON.stringify(compact(report, sections), null, 2)}\n`);
  return { file, whole };
}

/** Every stored report, oldest first. */
export function storedReports(): Array<{ name: string; report: StoredReport }> {
  let names: string[];
  try {
    names = readdirSync(RESULTS_DIR);
  } catch {
    return [];
  }
  return names
    .filter((name) => name.endsWith('.json') && name !== LATEST)
    .map((name) => ({ name, report: JSON.parse(readFileSync(join(RESULTS_DIR, name), 'utf8')) as StoredReport }))
    .sort((a, b) => a.report.date.localeCompare(b.report.date));
}
