import { describe, expect, it } from 'vitest';
import { figureOf } from '../../bench/figure-history.ts';
import { storedName, type StoredReport } from '../../bench/results.ts';

// Following one figure across stored bench runs: found by its dotted path, with the goal and ratio the report
// sets beside it, and only those that judge it.

const report: StoredReport = {
  date: '2026-11-27T12:00:16.123Z',
  code: { commit: 'abc1234', changed_files: 0 },
  summary: {
    create_contention: { unit: 'ms', p50_ms: 900, p99_ms: 2_100, goal_p99_ms: 3_000, ratio_p99_over_goal: 0.7 },
    heartbeat: { beat_p99_ms: { unit: 'ms', value: 220, goal: 2_000, ratio: 0.11, meets_goal: true } },
    workflow_cost: { create_to_ready: { requests_median: 8, goal: 9.5, ratio: 0.842, read_units_median: 7.5 } },
    sweep_reads: { clear_1000_due: { ms: 14_000, runs: 1, goal: { figure: 14_000, goal: 30_000, ratio: 0.467, meets_goal: true } } },
    api_over_floor: { unit: 'ratio', create: 1.4, release: 1.2 },
  },
};

describe('bench figure history', () => {
  it('names a stored run by its UTC time and commit, so that names sort as runs happened', () => {
    expect(storedName(report)).toBe('2026-11-27T12-00-16Z-abc1234.json');
  });

  it('finds a judged figure with its goal and ratio, inside it or named beside it', () => {
    expect(figureOf(report, 'summary.heartbeat.beat_p99_ms')).toEqual({
      date: report.date,
      commit: 'abc1234',
      value: 220,
      judged: { goal: 2_000, ratio: 0.11, meets_goal: true },
    });
    expect(figureOf(report, 'summary.create_contention.p99_ms')?.judged).toEqual({ goal_p99_ms: 3_000, ratio_p99_over_goal: 0.7 });
    expect(figureOf(report, 'summary.workflow_cost.create_to_ready.requests_median')?.judged).toEqual({ goal: 9.5, ratio: 0.842 });
    expect(figureOf(report, 'summary.sweep_reads.clear_1000_due.ms')?.judged).toEqual({ goal: 30_000, ratio: 0.467, meets_goal: true });
  });

  it('gives a figure no goal that is not its own', () => {
    expect(figureOf(report, 'summary.create_contention.p50_ms')).toMatchObject({ value: 900, judged: {} });
    expect(figureOf(report, 'summary.workflow_cost.create_to_ready.read_units_median')?.judged).toEqual({});
    expect(figureOf(report, 'summary.api_over_floor.create')).toMatchObject({ value: 1.4, judged: {} });
  });

  it('has nothing for a run without the figure', () => {
    expect(figureOf(report, 'summary.scale_soak.api_p99')).toBeUndefined();
  });
});
