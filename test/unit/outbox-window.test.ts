import { describe, expect, it } from 'vitest';
import { FIRST_LOOK_BACK_MS, outboxWindow, settledThroughDay, windowDays } from '#domain/events/outbox.ts';

const now = new Date('2026-11-27T00:03:00.000Z');

describe("the outbox fallback's window", () => {
  it('ends the grace before now, and starts where the last run stopped', () => {
    expect(outboxWindow('2026-11-26T23:50:00.000Z#a', now, 300_000)).toEqual({ after: '2026-11-26T23:50:00.000Z#a', until: '2026-11-26T23:58:00.000Z' });
  });

  it('looks a day back the first time', () => {
    const window = outboxWindow(undefined, now, 300_000);
    expect(Date.parse(window!.until) - Date.parse(window!.after)).toBe(FIRST_LOOK_BACK_MS);
  });

  it('is empty while nothing after the cursor is older than the grace', () => {
    expect(outboxWindow('2026-11-26T23:58:00.000Z', now, 300_000)).toBeNull();
    expect(outboxWindow('2026-11-26T23:59:00.000Z#b', now, 300_000)).toBeNull();
  });

  it('spans the UTC days its entries can be filed under, oldest first', () => {
    expect(windowDays({ after: '2026-11-26T23:50:00.000Z#a', until: '2026-11-26T23:58:00.000Z' })).toEqual(['2026-11-26']);
    expect(windowDays({ after: '2026-11-25T23:50:00.000Z#a', until: '2026-11-27T00:01:00.000Z' })).toEqual(['2026-11-25', '2026-11-26', '2026-11-27']);
  });

  it('a day read whole settles the window up to its end, or to the end of the window', () => {
    const window = { after: '2026-11-25T23:50:00.000Z#a', until: '2026-11-27T00:01:00.000Z' };
    expect(settledThroughDay('2026-11-25', window)).toBe('2026-11-26T00:00:00.000Z');
    expect(settledThroughDay('2026-11-27', window)).toBe(window.until);
    // Every position of the day sorts before the day's end; the next day's first ones after it.
    expect('2026-11-25T23:59:59.999Z#z' < settledThroughDay('2026-11-25', window)).toBe(true);
    expect('2026-11-26T00:00:00.000Z#a' > settledThroughDay('2026-11-25', window)).toBe(true);
  });
});
