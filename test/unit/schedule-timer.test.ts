import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createScheduleTimer } from '#local/schedule-timer.ts';

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('schedule timer', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('ticks once per interval and records when', async () => {
    const tick = vi.fn(async () => {});
    const timer = createScheduleTimer({ intervalMs: 1000, tick, log: () => {} });
    timer.start();
    expect(timer.running()).toBe(true);
    await vi.advanceTimersByTimeAsync(999);
    expect(tick).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(2001);
    expect(tick).toHaveBeenCalledTimes(3);
    expect(timer.stats()).toMatchObject({ ticks: 3, failures: 0, skipped: 0, lastTickAt: 1_003_000 });
    await timer.stop();
  });

  it('ticks at start when asked to', async () => {
    const tick = vi.fn(async () => {});
    const timer = createScheduleTimer({ intervalMs: 1000, tick, immediate: true, log: () => {} });
    timer.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(tick).toHaveBeenCalledTimes(1);
    await timer.stop();
  });

  it('skips firings while a tick is still running instead of overlapping', async () => {
    const slow = deferred();
    let concurrent = 0;
    let maxConcurrent = 0;
    const tick = vi.fn(async () => {
      concurrent++;
      maxConcurrent = Math.max(maxConcurrent, concurrent);
      if (tick.mock.calls.length === 1) await slow.promise;
      concurrent--;
    });
    const timer = createScheduleTimer({ intervalMs: 100, tick, log: () => {} });
    timer.start();
    await vi.advanceTimersByTimeAsync(450);
    expect(tick).toHaveBeenCalledTimes(1);
    expect(timer.stats()).toMatchObject({ ticks: 0, skipped: 3 });
    slow.resolve();
    await vi.advanceTimersByTimeAsync(100);
    expect(tick).toHaveBeenCalledTimes(2);
    expect(maxConcurrent).toBe(1);
    expect(timer.stats()).toMatchObject({ ticks: 2, skipped: 3, lastDurationMs: 0 });
    await timer.stop();
  });

  it('survives a throwing tick, counting and logging it', async () => {
    const log = vi.fn();
    let calls = 0;
    const timer = createScheduleTimer({
      intervalMs: 100,
      name: 'sweep',
      log,
      tick: async () => {
        calls++;
        if (calls === 1) throw new Error('table gone');
      },
    });
    timer.start();
    await vi.advanceTimersByTimeAsync(300);
    expect(calls).toBe(3);
    expect(timer.stats()).toMatchObject({ ticks: 3, failures: 1, lastError: 'Error: table gone' });
    expect(log).toHaveBeenCalledTimes(1);
    expect(log.mock.calls[0]![0]).toMatch(/^sweep: tick failed.*table gone/);
    expect(timer.running()).toBe(true);
    await timer.stop();
  });

  it('stop waits for the tick in flight and leaves no timer behind', async () => {
    const slow = deferred();
    const tick = vi.fn(() => slow.promise);
    const timer = createScheduleTimer({ intervalMs: 100, tick, log: () => {} });
    timer.start();
    await vi.advanceTimersByTimeAsync(100);
    expect(tick).toHaveBeenCalledTimes(1);

    let stopped = false;
    const stopping = timer.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(500);
    expect(stopped).toBe(false);
    expect(timer.running()).toBe(false);
    expect(tick).toHaveBeenCalledTimes(1);

    slow.resolve();
    await stopping;
    expect(timer.stats().ticks).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('runs the next tick at once while runAgainAtOnce says so, never once stopped', async () => {
    let left = 3;
    const tick = vi.fn(async (): Promise<void> => void left--);
    const timer = createScheduleTimer({ intervalMs: 1000, tick, runAgainAtOnce: () => left > 0, log: () => {} });
    timer.start();
    await vi.advanceTimersByTimeAsync(1000);
    // The interval's tick and its two follow-ups, all at the same instant.
    expect(tick).toHaveBeenCalledTimes(3);
    expect(timer.stats()).toMatchObject({ ticks: 3, skipped: 0, lastTickAt: 1_001_000 });

    left = 5;
    const slow = deferred();
    tick.mockImplementationOnce(() => slow.promise);
    await vi.advanceTimersByTimeAsync(1000);
    const stopping = timer.stop();
    slow.resolve();
    await stopping;
    expect(tick).toHaveBeenCalledTimes(4);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('with overlap, starts each firing whatever still runs, some of them twice, and stop waits for them all', async () => {
    const slow = deferred();
    let concurrent = 0;
    let maxConcurrent = 0;
    const runs: number[] = [];
    const tick = vi.fn(async (run: number) => {
      runs.push(run);
      concurrent++;
      maxConcurrent = Math.max(maxConcurrent, concurrent);
      await slow.promise;
      concurrent--;
    });
    let firings = 0;
    const timer = createScheduleTimer({ intervalMs: 100, tick, overlap: { twice: () => ++firings === 2 }, log: () => {} });
    timer.start();
    await vi.advanceTimersByTimeAsync(300);
    // Three firings, the second of them twice, none waiting for the first to end.
    expect(runs).toEqual([1, 2, 3, 4]);
    expect(maxConcurrent).toBe(4);
    expect(timer.stats()).toMatchObject({ started: 4, ticks: 0, skipped: 0 });

    let stopped = false;
    const stopping = timer.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    slow.resolve();
    await stopping;
    expect(timer.stats()).toMatchObject({ started: 4, ticks: 4 });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('rejects a nonsensical interval', () => {
    expect(() => createScheduleTimer({ intervalMs: 0, tick: async () => {} })).toThrow(RangeError);
  });
});
