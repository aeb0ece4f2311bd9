/** `items` in consecutive slices of at most `size`: what one batch request takes at a time. */
export function chunksOf<T>(items: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let start = 0; start < items.length; start += size) chunks.push(items.slice(start, start + size));
  return chunks;
}

/** A slot to run a task in: at most `max` tasks run at once, the others wait their turn in order. */
export function limiter(max: number) {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async <T>(task: () => Promise<T>): Promise<T> => {
    while (active >= max) await new Promise<void>((resolve) => waiting.push(resolve));
    active += 1;
    try {
      return await task();
    } finally {
      active -= 1;
      waiting.shift()?.();
    }
  };
}

/**
 * Runs `task` on every item, at most `limit` at once. Rejects with the first failure once all have settled, so
 * nothing is still writing when the caller hears of it.
 */
export async function inParallel<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  const slot = limiter(limit);
  const results = await Promise.allSettled(items.map((item) => slot(() => task(item))));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}
