import type { Client } from './http.ts';
import type { HistoryEntry } from './views.ts';

// A machine's history as the CLI reads it: newest first, page by page, and (for `machine watch`) which entries
// are new since the last read. History is append-only; entries carry no id, so an entry is known by its content,
// and only those at the newest `at` seen need remembering: anything older was printed or predates the watch.

/** The machine's history entries, newest first, read one page at a time as the caller goes on. */
export async function* historyNewestFirst(client: Client, machineId: string, pageSize: number): AsyncGenerator<HistoryEntry> {
  let nextToken: string | undefined;
  do {
    const page = await client.get('/admin/machines/{id}/history', { params: { path: { id: machineId }, query: { limit: pageSize, nextToken } } });
    yield* page.items;
    nextToken = page.nextToken;
  } while (nextToken);
}

export interface HistoryCursor {
  newestAt: string;
  /** The entries at `newestAt` already seen. */
  atNewest: ReadonlySet<string>;
}

const identity = (entry: HistoryEntry): string => JSON.stringify(entry);

/** The cursor once `seen` (any order) has been shown too; undefined while nothing was seen. */
export function advance(cursor: HistoryCursor | undefined, seen: HistoryEntry[]): HistoryCursor | undefined {
  let newestAt = cursor?.newestAt;
  let atNewest = new Set(cursor?.atNewest);
  for (const entry of seen) {
    if (newestAt === undefined || entry.at > newestAt) {
      newestAt = entry.at;
      atNewest = new Set();
    }
    if (entry.at === newestAt) atNewest.add(identity(entry));
  }
  return newestAt === undefined ? undefined : { newestAt, atNewest };
}

const isNew = (cursor: HistoryCursor | undefined, entry: HistoryEntry): boolean =>
  !cursor || entry.at > cursor.newestAt || (entry.at === cursor.newestAt && !cursor.atNewest.has(identity(entry)));

/** The entries written since `cursor`, oldest first: reads back only until the entries are older than it. */
export async function entriesSince(client: Client, machineId: string, cursor: HistoryCursor | undefined, pageSize = 100): Promise<HistoryEntry[]> {
  const fresh: HistoryEntry[] = [];
  for await (const entry of historyNewestFirst(client, machineId, pageSize)) {
    if (cursor && entry.at < cursor.newestAt) break;
    if (isNew(cursor, entry)) fresh.push(entry);
  }
  return fresh.reverse();
}
