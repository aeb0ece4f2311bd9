import type { HistoryEntry } from '#domain/core/model.ts';
import { utcDay } from '#domain/core/time.ts';

/** One UTC day's repair-automation events. */
export interface RepairDay {
  day: string;
  quarantined: number;
  repairsCompleted: number;
  repairsFailed: number;
}

export interface RepairStats {
  days: RepairDay[];
  /** From a machine's RepairRequested to its next RepairCompleted, for completions inside the window. */
  timeToRepairMinutes: { median?: number; p90?: number; count: number };
}

const DAY_MS = 86_400_000;

/** The `count` UTC days ending with today's, oldest first. */
export function lastDays(now: Date, count: number): string[] {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return Array.from({ length: count }, (_, i) => utcDay(new Date(today - (count - 1 - i) * DAY_MS)));
}

/**
 * A repair that completes with a new issue requests the next repair in the same commit, so at the same instant: the
 * completion closes the old request before the new one opens.
 */
const endsFirst = (entry: HistoryEntry): number => (entry.event?.type === 'RepairCompleted' ? 0 : 1);

/** Nearest-rank percentile of ascending values (p in 0..1). */
function percentile(sorted: number[], p: number): number {
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]!;
}

/**
 * Per-day counts and time to repair from the event-carrying history entries of `days` (any order). A completion
 * whose request falls before the window has no start here and is left out of the time to repair, not guessed.
 */
export function repairStats(days: string[], entries: HistoryEntry[]): RepairStats {
  const byDay = new Map(days.map((day) => [day, { day, quarantined: 0, repairsCompleted: 0, repairsFailed: 0 }]));
  const requestedAt = new Map<string, number>();
  const minutes: number[] = [];
  for (const entry of [...entries].sort((a, b) => a.at.localeCompare(b.at) || endsFirst(a) - endsFirst(b))) {
    const type = entry.event?.type;
    const day = byDay.get(utcDay(entry.at));
    if (!type || !day) continue;
    if (type === 'MachineQuarantined') day.quarantined += 1;
    if (type === 'RepairFailed') day.repairsFailed += 1;
    if (type === 'RepairRequested' && !requestedAt.has(entry.machineId)) requestedAt.set(entry.machineId, Date.parse(entry.at));
    if (type === 'RepairCompleted') {
      day.repairsCompleted += 1;
      const since = requestedAt.get(entry.machineId);
      if (since !== undefined) minutes.push((Date.parse(entry.at) - since) / 60_000);
      requestedAt.delete(entry.machineId);
    }
  }
  minutes.sort((a, b) => a - b);
  const round = (value: number) => Math.round(value * 10) / 10;
  return {
    days: [...byDay.values()],
    timeToRepairMinutes: minutes.length
      ? { median: round(percentile(minutes, 0.5)), p90: round(percentile(minutes, 0.9)), count: minutes.length }
      : { count: 0 },
  };
}
