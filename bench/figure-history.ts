import type { StoredReport } from './results.ts';

// One figure of the stored reports, found by its dotted path (`summary.create_contention.p99_ms`), with what judges
// it: the goal and ratio the report gives it.

export interface FigureRow {
  date: string;
  commit: string;
  value: unknown;
  /** Goal, ratio and the like, by their names in the report. */
  judged: Record<string, unknown>;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const JUDGING = /goal|ratio|floor/;
/** Words of a key that say how a figure is judged or counted, not which figure it is. */
const GENERIC = new Set(['goal', 'ratio', 'over', 'to', 'floor', 'ms', 's', 'us', 'meets']);
const words = (key: string) => key.split('_').filter((word) => !GENERIC.has(word));

/** The goal and ratio inside a judged figure (`{ value, goal, ratio, meets_goal }`) or of one beside it. */
const judgingFields = (figure: Record<string, unknown>) => Object.fromEntries(Object.entries(figure).filter(([key]) => JUDGING.test(key)));

/**
 * What judges a plain number in its group: a key beside it that names it (`goal_p99_ms` beside `p99_ms`), or a bare
 * `goal` or `ratio` when it is the group's first figure, the one its goal is set for (`requests_median`).
 */
function judgesBeside(group: Record<string, unknown>, key: string): Record<string, unknown> {
  const first = Object.keys(group).find((k) => typeof group[k] === 'number' && !JUDGING.test(k));
  const judged: Record<string, unknown> = {};
  for (const [other, value] of Object.entries(group)) {
    if (other === key || !JUDGING.test(other)) continue;
    const otherWords = words(other);
    const names = otherWords.some((word) => words(key).includes(word));
    if (!names && !(otherWords.length === 0 && key === first)) continue;
    if (isObject(value)) Object.assign(judged, judgingFields(value));
    else judged[other] = value;
  }
  return judged;
}

export function figureOf(report: StoredReport, path: string): FigureRow | undefined {
  const steps = path.split('.');
  let group: unknown;
  let value: unknown = report;
  for (const step of steps) {
    if (!isObject(value) || !(step in value)) return undefined;
    group = value;
    value = value[step];
  }
  const row = { date: report.date, commit: report.code?.commit ?? '?' };
  if (isObject(value) && ('value' in value || 'figure' in value)) return { ...row, value: value.value ?? value.figure, judged: judgingFields(value) };
  return { ...row, value, judged: isObject(group) ? judgesBeside(group, steps.at(-1)!) : {} };
}
