import { describe, expect, it } from 'vitest';
import { FunctionTimedOut, invokeFunction } from '#local/lambda-invocation.ts';
import { createScheduleTimer } from '#local/schedule-timer.ts';

// FLEETWARD_AWS_SEMANTICS=lambda-timeouts: the runner invokes its functions as Lambda does, each stopped at its
// timeout, and tells each its real time left (the stream batch stopped and retried is in stream-poller-parallel.test.ts).

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a function invoked as Lambda invokes it', () => {
  it('is told the time it has left, from its timeout', async () => {
    const left = await invokeFunction({ functionName: 'SweepHandler', timeoutMs: 5_000, stopAtTimeout: false }, async (context) => {
      const first = context.getRemainingTimeInMillis();
      await sleep(100);
      return [first, context.getRemainingTimeInMillis()];
    });
    expect(left[0]).toBeLessThanOrEqual(5_000);
    expect(left[0]).toBeGreaterThan(4_800);
    expect(left[0]! - left[1]!).toBeGreaterThanOrEqual(90);
  });

  it('fails at its timeout when the runner stops functions there, and runs on when it does not', async () => {
    const slow = () => sleep(400).then(() => 'finished');
    await expect(invokeFunction({ functionName: 'SweepHandler', timeoutMs: 100, stopAtTimeout: true }, slow)).rejects.toThrow(FunctionTimedOut);
    await expect(invokeFunction({ functionName: 'SweepHandler', timeoutMs: 100, stopAtTimeout: false }, slow)).resolves.toBe('finished');
  });

  it('makes a sweep still running at its timeout a failed run of the schedule', async () => {
    const lines: string[] = [];
    const timer = createScheduleTimer({
      intervalMs: 60_000,
      immediate: true,
      tick: () => invokeFunction({ functionName: 'SweepHandler', timeoutMs: 100, stopAtTimeout: true }, () => sleep(2_000)),
      log: (line) => lines.push(line),
    });
    timer.start();
    await expect.poll(() => timer.stats().ticks, { timeout: 5_000 }).toBe(1);
    await timer.stop();
    expect(timer.stats()).toMatchObject({ started: 1, failures: 1 });
    expect(lines.join('\n')).toMatch(/Task timed out after 0\.10 seconds/);
  });
});
