import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DATA_VERSION_KEY, LATEST_DATA_VERSION } from '#store/data-version.ts';
import type { TableKey } from '#store/item-access.ts';
import { TableLayout } from '#store/layout.ts';
import { MemoryItems } from '#store/memory-items.ts';
import { ThrottledError } from '#store/port.ts';
import { THROTTLE_RETRY_BUDGET_MS } from '#store/throttle.ts';

// A container's first look at the table's layout, when the read of its data version is late or throttled: reads go on
// without it (they read both layouts), a write waits for it, since a record in the wrong layout is one that a release
// does not see.

/** Table items whose data version read answers after `delayMs`, or fails as throttled. */
function itemsReadingTheVersion(outcome: { delayMs: number } | 'throttled', version?: Record<string, unknown>) {
  const items = new MemoryItems();
  if (version) void items.putIfAbsent({ ...DATA_VERSION_KEY, ...version });
  const getItem = items.getItem.bind(items);
  return Object.assign(Object.create(items) as MemoryItems, {
    getItem: async (key: TableKey) => {
      if (key.pk !== DATA_VERSION_KEY.pk) return getItem(key);
      if (outcome === 'throttled') throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
      await new Promise((resolve) => setTimeout(resolve, outcome.delayMs));
      return getItem(key);
    },
  });
}

describe('the table layout, first read late', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());
  /** What `answer` resolves to, `ms` (fake) having passed. */
  const elapsing = async <T>(ms: number, answer: Promise<T>): Promise<T> => {
    await vi.advanceTimersByTimeAsync(ms);
    return answer;
  };

  it('a table pinned to 0.1.0 is written as 0.1.0 writes, however late the version read answers', async () => {
    const layout = new TableLayout(itemsReadingTheVersion({ delayMs: 500 }));
    expect(await elapsing(300, layout.legacyReads())).toBe(true);
    expect(await elapsing(500, layout.legacyWrites())).toBe(true);
  });

  it("a table at this release's data version is written in this release's layout", async () => {
    const layout = new TableLayout(itemsReadingTheVersion({ delayMs: 500 }, { dataVersion: LATEST_DATA_VERSION, version: 1 }));
    expect(await elapsing(500, layout.legacyWrites())).toBe(false);
    // Read once, it is known: a later late read goes on as it was.
    expect(await elapsing(300, layout.legacyReads())).toBe(false);
  });

  it('a version read throttled throughout fails the write as throttled, to be sent again, and lets reads go on with both layouts', async () => {
    const layout = new TableLayout(itemsReadingTheVersion('throttled'));
    expect(await layout.legacyReads()).toBe(true);
    const written = layout.legacyWrites().catch((error: unknown) => error);
    expect(await elapsing(THROTTLE_RETRY_BUDGET_MS, written)).toBeInstanceOf(ThrottledError);
  });
});
