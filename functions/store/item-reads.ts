import { compareByQuery, keyAttributesOf, listingOf, type Item, type ItemAccess, type ItemPage, type ItemQuery } from '#store/item-access.ts';
import {
  decodeMergedPageToken,
  decodePageToken,
  decodeSequencePageToken,
  encodeMergedPageToken,
  encodePageToken,
  encodeSequencePageToken,
  type PartitionCursor,
} from '#store/paging.ts';
import type { PageRequest } from '#store/port.ts';

// Listings that read several partitions as one, and reads of a partition to its end: what aggregates share.

/** Rack partitions (of byKind's machines, of the allocatable index) read at once. */
export const RACKS_AT_ONCE = 16;
/**
 * Partitions a page of a listing across partitions reads when its limit is smaller (two rounds): a page in a sparse
 * stretch comes back short with a token instead of reading on through every rack of a type.
 */
const PARTITIONS_PER_PAGE = 2 * RACKS_AT_ONCE;

/** The page token of a query that stopped after `last`. */
const lastKeyToken = (query: ItemQuery, last: Item): string | null =>
  encodePageToken(listingOf(query), Object.fromEntries(keyAttributesOf(query).map((name) => [name, last[name]]))) ?? null;

/** What a partition read to its end gives. */
const NOTHING_LEFT: ItemPage = { items: [] };

export async function allItems(items: ItemAccess, query: ItemQuery): Promise<Item[]> {
  const found: Item[] = [];
  let nextToken: string | undefined;
  do {
    const page = await items.queryItems(query, nextToken);
    found.push(...page.items);
    nextToken = page.nextToken;
  } while (nextToken);
  return found;
}

/**
 * Partitions of one listing read side by side and merged in their sort key's order (their queries' direction, ties
 * by table key): each is read up to the page's limit, all at once, and the page is the first `limit` of what came
 * back. A partition that stopped short of its limit with more to read (a filter left items out, or DynamoDB's 1 MB
 * a page) has read only up to where it stopped: nothing past that is taken from any partition, since its unread
 * items may come before them. So a page may come back short, even empty, with a token; the token holds where each
 * partition stands, and each page moves at least the partition that stopped first on.
 */
export async function readMerged(items: ItemAccess, scope: string, queries: readonly ItemQuery[], page: PageRequest): Promise<ItemPage> {
  const cursors = decodeMergedPageToken(scope, page.nextToken, queries.length);
  const pages = await Promise.all(
    queries.map((query, at) => {
      const cursor = cursors[at];
      return cursor === 'done' ? NOTHING_LEFT : items.queryItems({ ...query, limit: page.limit }, cursor ?? undefined);
    }),
  );
  const order = (a: Item, b: Item) => compareByQuery(queries[0]!, a, b);
  const stops = pages.flatMap((found, at) => (found.nextToken ? [decodePageToken(listingOf(queries[at]!), found.nextToken)] : []));
  const readUpTo = (item: Item) => stops.every((stop) => order(item, stop) <= 0);
  const read = pages.flatMap((found, at) => found.items.map((item) => ({ item, at })));
  const taken = read
    .filter(({ item }) => readUpTo(item))
    .sort((a, b) => order(a.item, b.item))
    .slice(0, page.limit);
  const next = cursors.map((cursor, at): PartitionCursor => {
    if (cursor === 'done') return cursor;
    const found = pages[at]!;
    const mine = taken.filter((t) => t.at === at).length;
    if (mine === found.items.length) return found.nextToken ?? 'done';
    return mine === 0 ? cursor : lastKeyToken(queries[at]!, found.items[mine - 1]!);
  });
  return { items: taken.map((t) => t.item), nextToken: encodeMergedPageToken(scope, next) };
}

/**
 * Partitions read one after another, in the order of their names, as one listing: RACKS_AT_ONCE at a time, each
 * for what the page still has room for; a page reads PARTITIONS_PER_PAGE of them or, if more, its limit's number.
 * A page stops in the partition that has more than it took, or after the last partition it may read; the token
 * names the partition to go on in and where in it (a partition gone since resumes at the next one). So a page may
 * come back short, even empty, with a token.
 */
export async function readInOrder(access: ItemAccess, scope: string, queries: readonly ItemQuery[], page: PageRequest): Promise<ItemPage> {
  const cursor = decodeSequencePageToken(scope, page.nextToken);
  let at = cursor ? queries.findIndex((query) => query.partition >= cursor.partition) : 0;
  if (at < 0) at = queries.length;
  let token = cursor && queries[at]?.partition === cursor.partition ? (cursor.token ?? undefined) : undefined;
  const items: Item[] = [];
  const stopAt = (query: ItemQuery | undefined, inner: string | null) => encodeSequencePageToken(scope, query && { partition: query.partition, token: inner });
  const end = Math.min(queries.length, at + Math.max(PARTITIONS_PER_PAGE, page.limit));
  while (at < end) {
    const wave = queries.slice(at, Math.min(end, at + RACKS_AT_ONCE));
    const room = page.limit - items.length;
    const pages = await Promise.all(wave.map((query, i) => access.queryItems({ ...query, limit: room }, i === 0 ? token : undefined)));
    for (const [i, found] of pages.entries()) {
      const query = wave[i]!;
      const taken = found.items.slice(0, page.limit - items.length);
      items.push(...taken);
      const last = taken.at(-1);
      if (taken.length < found.items.length) {
        const from = last ? lastKeyToken(query, last) : i === 0 ? (token ?? null) : null;
        return { items, nextToken: stopAt(query, from) };
      }
      if (found.nextToken) return { items, nextToken: stopAt(query, found.nextToken) };
      if (items.length === page.limit) return { items, nextToken: stopAt(queries[at + i + 1], null) };
    }
    at += wave.length;
    token = undefined;
  }
  return { items, nextToken: stopAt(queries[at], null) };
}
