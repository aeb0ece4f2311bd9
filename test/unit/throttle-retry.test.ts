import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { ThrottledError } from '#store/port.ts';
import { withTimeLeft } from '#store/deadline.ts';
import { isThrottled, retryThrottled, THROTTLE_RESERVE_MS, THROTTLE_RETRY_BUDGET_MS, throttleBudgetMs, throttleDelayMs } from '#store/throttle.ts';

const cancelled = (...codes: string[]) =>
  new TransactionCanceledException({ message: 'cancelled', CancellationReasons: codes.map((Code) => ({ Code })), $metadata: {} });

describe('a throttle, as DynamoDB reports one', () => {
  it.each([
    ['ThrottlingException', Object.assign(new Error('x'), { name: 'ThrottlingException' }), true],
    ['ProvisionedThroughputExceededException', Object.assign(new Error('x'), { name: 'ProvisionedThroughputExceededException' }), true],
    ['a transaction cancelled for ThrottlingError', cancelled('ThrottlingError', 'None'), true],
    ['a transaction that lost a race as well (the race decides)', cancelled('ThrottlingError', 'ConditionalCheckFailed'), false],
    ['a transaction conflict', cancelled('TransactionConflict'), false],
    ['anything else', new Error('boom'), false],
  ])('%s', (_name, error, throttled) => {
    expect(isThrottled(error)).toBe(throttled);
  });
});

describe('retrying a throttle', () => {
  it('tries again after a jittered, growing delay until the call gets through', async () => {
    let calls = 0;
    const result = await retryThrottled(async () => {
      calls++;
      if (calls < 3) throw cancelled('ThrottlingError');
      return 'written';
    });
    expect({ result, calls }).toEqual({ result: 'written', calls: 3 });
    expect(throttleDelayMs(0, () => 0.999)).toBeLessThan(throttleDelayMs(4, () => 0.999));
    expect(throttleDelayMs(30, () => 0.999)).toBeLessThanOrEqual(400);
  });

  it('gives up with a ThrottledError once its budget is spent, and passes any other error at once', async () => {
    let calls = 0;
    const started = Date.now();
    const failed = await retryThrottled(async () => {
      calls++;
      throw cancelled('ThrottlingError');
    }, 200).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(ThrottledError);
    expect(calls).toBeGreaterThan(1);
    expect(Date.now() - started).toBeLessThan(1_000);
    await expect(retryThrottled(async () => Promise.reject(new RangeError('bug')))).rejects.toBeInstanceOf(RangeError);
  });
});

describe("a throttle's retry budget", () => {
  it("is the invocation's time left less a reserve for the last try and the answer, and a fixed budget outside any invocation", () => {
    expect(throttleBudgetMs()).toBe(THROTTLE_RETRY_BUDGET_MS);
    expect(
      withTimeLeft(
        () => 9_000,
        () => throttleBudgetMs(),
      ),
    ).toBe(9_000 - THROTTLE_RESERVE_MS);
    expect(
      withTimeLeft(
        () => 1_000,
        () => throttleBudgetMs(),
      ),
    ).toBe(0);
  });

  it('runs out with the deadline: a call throttled until then gives up in time for the handler to answer', async () => {
    const deadline = Date.now() + THROTTLE_RESERVE_MS + 300;
    const failed = await withTimeLeft(
      () => deadline - Date.now(),
      () =>
        retryThrottled(async () => {
          throw cancelled('ThrottlingError');
        }),
    ).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(ThrottledError);
    expect(deadline - Date.now()).toBeGreaterThan(THROTTLE_RESERVE_MS - 500);
  });
});
