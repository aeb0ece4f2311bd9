import { createRequire } from 'node:module';
import { ApiError, CliError, type ProblemDocument } from './errors.ts';

// Tables and key/value blocks for people, JSON or YAML for scripts; errors always on stderr.

// Loaded only when YAML is asked for: importing `yaml` costs every run ~0.2 s of start-up.
const require = createRequire(import.meta.url);
const toYaml = (value: unknown): string => (require('yaml') as typeof import('yaml')).stringify(value);

export const formats = ['table', 'json', 'yaml'] as const;
export type Format = (typeof formats)[number];

/** `--format`, or its alias `--output` (kubectl's `-o`). */
export const chosenFormat = (options: { format?: Format; output?: Format }): Format => options.format ?? options.output ?? 'table';

export interface Streams {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
}

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
}

const cell = (value: unknown): string => {
  if (value === undefined || value === null || value === '') return '-';
  if (Array.isArray(value)) return value.length === 0 ? '-' : value.map(cell).join(',');
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
};

/** One row without padding, for output that streams (its later rows are not known yet). */
export const renderRow = <T>(row: T, columns: Column<T>[]): string => columns.map((c) => cell(c.value(row))).join('  ');

/** Columns padded to their widest cell; the last column is not padded. */
export function renderTable<T>(rows: T[], columns: Column<T>[]): string {
  const cells = [columns.map((c) => c.header.toUpperCase()), ...rows.map((row) => columns.map((c) => cell(c.value(row))))];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i]!.length)));
  return cells
    .map((line) =>
      line
        .map((text, i) => (i === line.length - 1 ? text : text.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function renderKeyValues(pairs: Array<[string, unknown]>): string {
  const width = Math.max(...pairs.map(([key]) => key.length)) + 1;
  return pairs.map(([key, value]) => `${`${key}:`.padEnd(width)}  ${cell(value)}`).join('\n');
}

/** "12s ago", "3m ago", "2h ago", "4d ago". */
export function age(iso: string | undefined, now = Date.now()): string {
  if (!iso) return '-';
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 90) return `${seconds}s ago`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)}m ago`;
  if (seconds < 36 * 3600) return `${Math.round(seconds / 3600)}h ago`;
  return `${Math.round(seconds / 86400)}d ago`;
}

/** A span of whole minutes for people: "0m", "59m", "1h 1m", "2d 3h". */
export function minutes(total: number | undefined): string {
  if (total === undefined || !Number.isFinite(total)) return '-';
  const m = Math.max(0, Math.floor(total));
  if (m < 60) return `${m}m`;
  if (m < 24 * 60) return `${Math.floor(m / 60)}h ${m % 60}m`;
  return `${Math.floor(m / 1440)}d ${Math.floor((m % 1440) / 60)}h`;
}

export const formatLabels = (labels: Record<string, string> | undefined): string =>
  Object.entries(labels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(',');

export class Output {
  readonly format: Format;
  readonly streams: Streams;
  constructor(format: Format, streams: Streams = { stdout: process.stdout, stderr: process.stderr }) {
    this.format = format;
    this.streams = streams;
  }

  /** JSON or YAML: stdout carries the values only. */
  get forScripts(): boolean {
    return this.format !== 'table';
  }

  /** The value as JSON or YAML text; undefined in table format. */
  serialize(value: unknown): string | undefined {
    if (this.format === 'json') return JSON.stringify(value, null, 2);
    if (this.format === 'yaml') return toYaml(value);
    return undefined;
  }

  /** For scripts the value itself; for people what `human` renders. */
  result(value: unknown, human: () => string): void {
    this.line(this.serialize(value) ?? human());
  }

  /** One record of a stream: a JSON line, a YAML document, or what `human` renders on one line. */
  record(value: unknown, human: () => string): void {
    if (this.format === 'json') this.line(JSON.stringify(value));
    else if (this.format === 'yaml') this.line(`---\n${toYaml(value)}`);
    else this.line(human());
  }

  line(text: string): void {
    this.streams.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  /** Progress and notes for people: stderr, so stdout stays what a script reads. */
  note(text: string): void {
    this.streams.stderr.write(`${text}\n`);
  }

  /** The problem's detail and field errors (or, with --format json|yaml, the problem document) on stderr. */
  error(error: unknown): number {
    if (error instanceof ApiError) {
      const document = this.serialize(error.problem);
      this.streams.stderr.write(document === undefined ? describeProblem(error.problem) : `${document.trimEnd()}\n`);
      return 1;
    }
    if (error instanceof CliError) {
      const document = this.format === 'json' ? JSON.stringify({ error: error.message }) : this.serialize({ error: error.message });
      this.streams.stderr.write(document === undefined ? `error: ${error.message}\n` : `${document.trimEnd()}\n`);
      return error.exitCode;
    }
    this.streams.stderr.write(`error: ${(error as Error)?.stack ?? String(error)}\n`);
    return 1;
  }
}

export function describeProblem(problem: ProblemDocument): string {
  const tag = [problem.status, problem.code].filter(Boolean).join(' ');
  const lines = [`error: ${problem.detail ?? problem.title ?? 'request failed'} (${tag})`];
  for (const field of problem.errors ?? []) lines.push(`  ${field.path || '(body)'}: ${field.message}`);
  return `${lines.join('\n')}\n`;
}
