import { describe, expect, it } from 'vitest';
import { advance, entriesSince } from '#cli/history.ts';
import type { Client } from '#cli/http.ts';
import type { HistoryEntry } from '#cli/views.ts';

// `machine watch`: which history entries are new since the last read, against a history served newest first in
// pages, as GET /admin/machines/{id}/history serves it.

const entry = (at: string, action: string): HistoryEntry => ({ machineId: 'm-1', at, actor: 'ops', action });

/** A client whose history route pages through `history` (newest first), counting the pages read. */
function historyClient(history: () => HistoryEntry[]) {
  const reads: Array<string | undefined> = [];
  const client = {
    get: async (_path: string, init: { params: { query: { limit: number; nextToken?: string } } }) => {
      const { limit, nextToken } = init.params.query;
      reads.push(nextToken);
      const start = nextToken ? Number(nextToken) : 0;
      const items = history().slice(start, start + limit);
      return { items, ...(start + limit < history().length ? { nextToken: String(start + limit) } : {}) };
    },
  } as unknown as Client;
  return { client, reads };
}

describe('machine watch: entries since a cursor', () => {
  it('finds only what was written since, oldest first, and reads back no further than the cursor', async () => {
    let history = [entry('2026-01-01T00:00:03Z', 'c'), entry('2026-01-01T00:00:02Z', 'b'), entry('2026-01-01T00:00:01Z', 'a')];
    const { client, reads } = historyClient(() => history);
    const cursor = advance(undefined, history);
    expect(await entriesSince(client, 'm-1', cursor, 2)).toEqual([]);

    history = [entry('2026-01-01T00:00:05Z', 'e'), entry('2026-01-01T00:00:04Z', 'd'), ...history];
    reads.length = 0;
    const fresh = await entriesSince(client, 'm-1', cursor, 2);
    expect(fresh.map((e) => e.action)).toEqual(['d', 'e']);
    // Page 1 (e, d), page 2 (c: the cursor's own entry, then b: older, stop); page 3 is never read.
    expect(reads).toEqual([undefined, '2']);
    expect(await entriesSince(client, 'm-1', advance(cursor, fresh), 2)).toEqual([]);
  });

  it('tells apart entries written at the same instant as the newest one already shown', async () => {
    const same = '2026-01-01T00:00:01Z';
    let history = [entry(same, 'first')];
    const { client } = historyClient(() => history);
    const cursor = advance(undefined, history);
    history = [entry(same, 'second'), entry(same, 'first')];
    const fresh = await entriesSince(client, 'm-1', cursor);
    expect(fresh.map((e) => e.action)).toEqual(['second']);
    expect(await entriesSince(client, 'm-1', advance(cursor, fresh))).toEqual([]);
  });

  it('without a cursor (an empty history at start) everything is new', async () => {
    const { client } = historyClient(() => [entry('2026-01-01T00:00:02Z', 'b'), entry('2026-01-01T00:00:01Z', 'a')]);
    expect(advance(undefined, [])).toBeUndefined();
    expect((await entriesSince(client, 'm-1', undefined)).map((e) => e.action)).toEqual(['a', 'b']);
  });
});
