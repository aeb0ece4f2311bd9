import { describe, expect, it } from 'vitest';
import type { HistoryEntry } from '#domain/core/model.ts';
import { lastDays, repairStats } from '#domain/repair/repair-stats.ts';

const event = (machineId: string, at: string, type: string): HistoryEntry => ({
  machineId,
  at,
  actor: 'test',
  action: 'event-emitted',
  message: type,
  event: { type, detail: {} },
});

describe('repairStats', () => {
  const days = lastDays(new Date('2026-03-03T12:00:00Z'), 3);

  it('lists the window oldest first, ending today (UTC)', () => {
    expect(days).toEqual(['2026-03-01', '2026-03-02', '2026-03-03']);
    expect(lastDays(new Date('2026-01-01T00:30:00Z'), 2)).toEqual(['2025-12-31', '2026-01-01']);
  });

  it('counts quarantines, completions and failures per day, and zero on days without events', () => {
    const stats = repairStats(days, [
      event('m1', '2026-03-01T23:59:59.999Z', 'MachineQuarantined'),
      event('m2', '2026-03-03T00:00:00.000Z', 'MachineQuarantined'),
      event('m3', '2026-03-03T01:00:00.000Z', 'MachineQuarantined'),
      event('m1', '2026-03-03T02:00:00.000Z', 'RepairFailed'),
      event('m2', '2026-03-03T03:00:00.000Z', 'RepairCompleted'),
      event('m2', '2026-03-03T03:00:00.000Z', 'event-delivered-not-an-event'),
      event('m9', '2026-02-28T03:00:00.000Z', 'MachineQuarantined'), // outside the window
    ]);
    expect(stats.days).toEqual([
      { day: '2026-03-01', quarantined: 1, repairsCompleted: 0, repairsFailed: 0 },
      { day: '2026-03-02', quarantined: 0, repairsCompleted: 0, repairsFailed: 0 },
      { day: '2026-03-03', quarantined: 2, repairsCompleted: 1, repairsFailed: 1 },
    ]);
  });

  it('time to repair runs from a machine’s first RepairRequested to its RepairCompleted; median and p90 by nearest rank', () => {
    const entries: HistoryEntry[] = [];
    // Ten machines repaired in 10, 20, ... 100 minutes, given out of order.
    for (let i = 10; i >= 1; i--) {
      entries.push(event(`m${i}`, `2026-03-02T10:${String(i * 5).padStart(2, '0')}:00.000Z`, 'RepairCompleted'));
      entries.push(
        event(`m${i}`, new Date(Date.parse(`2026-03-02T10:${String(i * 5).padStart(2, '0')}:00.000Z`) - i * 10 * 60_000).toISOString(), 'RepairRequested'),
      );
    }
    // A failed attempt re-requests: the clock keeps running from the first request.
    entries.push(event('m11', '2026-03-03T00:00:00.000Z', 'RepairRequested'));
    entries.push(event('m11', '2026-03-03T01:00:00.000Z', 'RepairFailed'));
    entries.push(event('m11', '2026-03-03T01:00:00.000Z', 'RepairRequested'));
    entries.push(event('m11', '2026-03-03T03:00:00.000Z', 'RepairCompleted'));
    // Completed without a request inside the window: counted per day, not timed.
    entries.push(event('m12', '2026-03-01T01:00:00.000Z', 'RepairCompleted'));
    const stats = repairStats(days, entries);
    expect(stats.timeToRepairMinutes).toEqual({ median: 60, p90: 100, count: 11 });
    expect(stats.days.map((d) => d.repairsCompleted)).toEqual([1, 10, 1]);
  });

  it('a completion that requests the next repair at the same instant closes the old request first', () => {
    const stats = repairStats(days, [
      event('m1', '2026-03-02T00:00:00.000Z', 'RepairRequested'),
      event('m1', '2026-03-02T01:00:00.000Z', 'RepairRequested'), // the next repair, committed with the completion
      event('m1', '2026-03-02T01:00:00.000Z', 'RepairCompleted'),
      event('m1', '2026-03-02T01:30:00.000Z', 'RepairCompleted'),
    ]);
    expect(stats.timeToRepairMinutes).toEqual({ median: 30, p90: 60, count: 2 });
  });

  it('has no median or p90 without a timed repair', () => {
    expect(repairStats(days, []).timeToRepairMinutes).toEqual({ count: 0 });
  });
});
