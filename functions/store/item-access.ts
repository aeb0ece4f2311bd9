import { MAX_TRANSACTION_ITEMS } from '#domain/core/change.ts';
import type { UsageWrite } from '#store/aggregates/quota-usage-items.ts';
import type { Listing } from '#store/paging.ts';
import type { indexes } from '#store/table.ts';

// The table primitives both adapters provide (dynamo-items.ts, memory-items.ts): every aggregate's reads and writes
// are built on these alone, so the rules of the sparse indexes and of the guards cannot drift between the adapters.

export type Item = Record<string, unknown>;
export type TableKey = { pk: string; sk: string };

/** An item's table key as one string, to find the items a batch read returned (in no order) by the keys asked for. */
export const tableKeyOf = (item: Record<string, unknown>): string => `${String(item.pk)}|${String(item.sk)}`;
export type IndexDefinition = (typeof indexes)[keyof typeof indexes];

/** A DynamoDB key condition on the sort key. */
export type SortCondition = { between: [string, string] } | { atMost: string } | { atLeast: string } | { beginsWith: string };

/** One Query, described independently of how it is run. */
export interface ItemQuery {
  /** A GSI of table.ts; absent: the table itself (pk, sk). */
  index?: IndexDefinition;
  partition: string;
  sort?: SortCondition;
  /** Sort key descending (ScanIndexForward false). */
  descending?: boolean;
  limit?: number;
  /** A filter applied after Limit, as DynamoDB does: a page may come back short, even empty, with a nextToken. */
  where?: { attribute: string; equals: string };
  /** Strongly consistent (the table only; GSIs cannot be). */
  consistent?: boolean;
  /** The index entries as they are, not the items they name: of a KEYS_ONLY index, keys only, and no read of the table. */
  entriesOnly?: boolean;
  /** Only these attributes of each item (and its keys): a read that leaves out a large attribute it has no use for. */
  attributes?: readonly string[];
}

/** How a batch read reads: strongly consistent unless told, whole items unless attributes are named. */
export interface ItemRead {
  consistent?: boolean;
  attributes?: readonly string[] | undefined;
}

export interface ItemPage {
  items: Item[];
  nextToken?: string | undefined;
}

/**
 * A record written whole, guarded by the version it was read at or by not existing yet; `any`: unguarded, a mirror
 * of a guarded write in the same transaction (a site item's 0.1.0 twin, see legacy-layout.ts).
 */
export type GuardedPut = { put: Item; expectedVersion: number | null | 'any' };
export type ItemWrite = GuardedPut | UsageWrite;

export const TRANSACTION_LIMIT = MAX_TRANSACTION_ITEMS;

/** What an adapter does with the table; everything above it is shared. */
export interface ItemAccess {
  getItem(key: TableKey): Promise<Item | undefined>;
  /** Strongly consistent; in no particular order; keys not found are left out; only `attributes` (and keys) when named. */
  getItems(keys: TableKey[], read?: ItemRead): Promise<Item[]>;
  queryItems(query: ItemQuery, nextToken?: string): Promise<ItemPage>;
  countItems(query: ItemQuery): Promise<number>;
  /** All or nothing; a failed guard raises StaleWriteError. */
  writeItems(writes: ItemWrite[]): Promise<void>;
  /** Unguarded puts in batches; not all or nothing. */
  putItems(items: Item[]): Promise<void>;
  /** Writes `item` unless an item with its key exists; false when one did. */
  putIfAbsent(item: Item): Promise<boolean>;
  /** The unique part of a history or audit entry's sort key, so entries at the same instant do not overwrite each other. */
  historySuffix(): string;
}

/** What a page token of this query is bound to: the index, the partition, and whatever else shapes its pages. */
export const listingOf = (query: ItemQuery): Listing => ({
  index: query.index ? (query.index.name as Listing['index']) : 'table',
  partition: query.partition,
  scope: [query.sort ?? null, query.descending ?? false, query.where ?? null],
});

/** The key attributes of a query's table or index, in the order DynamoDB reports them in LastEvaluatedKey. */
export const keyAttributesOf = (query: Pick<ItemQuery, 'index'>): string[] => (query.index ? ['pk', 'sk', query.index.pk, query.index.sk] : ['pk', 'sk']);

export const sortAttributeOf = (query: Pick<ItemQuery, 'index'>): string => query.index?.sk ?? 'sk';
export const partitionAttributeOf = (query: Pick<ItemQuery, 'index'>): string => query.index?.pk ?? 'pk';

/** Order within the query's partition: by its sort key, ties by the table key; descending when asked. */
export function compareByQuery(query: Pick<ItemQuery, 'index' | 'descending'>, a: Item, b: Item): number {
  const sort = sortAttributeOf(query);
  const ascending = compareStrings(a[sort], b[sort]) || compareStrings(a.pk, b.pk) || compareStrings(a.sk, b.sk);
  return query.descending ? -ascending : ascending;
}

const compareStrings = (a: unknown, b: unknown): number => (String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0);
