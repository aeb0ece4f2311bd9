/**
 * Callers waiting for the stream poller to be idle (`whenIdle`): each is settled by the first pass that begins after
 * its call and finds everything drained, so what was written before the call has been delivered or set aside.
 */
interface IdleWaiter {
  afterPass: number;
  resolve: () => void;
  reject: (error: Error) => void;
}

export function createIdleWaiters() {
  let waiters: IdleWaiter[] = [];
  return {
    /** Resolves after a pass numbered above `afterPass` finds the poller drained; rejects after `timeoutMs`. */
    wait(afterPass: number, timeoutMs: number): Promise<void> {
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters = waiters.filter((w) => w !== waiter);
          reject(new Error(`stream poller not idle within ${timeoutMs} ms`));
        }, timeoutMs);
        const waiter: IdleWaiter = {
          afterPass,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
          reject: (error) => {
            clearTimeout(timer);
            reject(error);
          },
        };
        waiters.push(waiter);
      });
    },
    /** Pass `passNumber` found the poller drained: settles those who waited for a pass after theirs began. */
    drained(passNumber: number): void {
      const waiting: IdleWaiter[] = [];
      for (const waiter of waiters) {
        if (passNumber > waiter.afterPass) waiter.resolve();
        else waiting.push(waiter);
      }
      waiters = waiting;
    },
    rejectAll(error: Error): void {
      for (const waiter of waiters) waiter.reject(error);
      waiters = [];
    },
  };
}
