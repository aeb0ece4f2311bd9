import { isUsageWrite, usageAfter } from '#store/aggregates/quota-usage-items.ts';
import {
  compareByQuery,
  keyAttributesOf,
  listingOf,
  partitionAttributeOf,
  sortAttributeOf,
  type Item,
  type ItemAccess,
  type ItemPage,
  type ItemQuery,
  type ItemRead,
  type ItemWrite,
  type SortCondition,
  type TableKey,
} from '#store/item-access.ts';
import { decodePageToken, encodePageToken, invalidPageToken } from '#store/paging.ts';
import { StaleWriteError } from '#store/port.ts';
import { indexes } from '#store/table.ts';

export interface MemoryStoreOptions {
  /**
   * How far index reads, and Queries not strongly consistent, lag the table, as GSIs do in AWS: they see every item
   * as it was this long ago. Off (0) by default, as DynamoDB Local has it.
   */
  indexLagMs?: number;
  /** The clock the lag is measured by, in ms (a test's own clock). */
  now?: () => number;
}

/** A write the lagging reads may still not see: the item's image before it. */
interface RecentWrite {
  at: number;
  key: string;
  before: Item | undefined;
}

/**
 * The table in memory: the same guards and all-or-nothing transactions, and each Query emulated over the items as
 * DynamoDB runs it (sparse index membership, sort order, Limit before filter, LastEvaluatedKey tokens).
 * Deterministic: history suffixes count up. The indexes' lag is emulated on demand (MemoryStoreOptions); not
 * emulated: the 1 MB page size.
 */
export class MemoryItems implements ItemAccess {
  private readonly items = new Map<string, Item>();
  private historyCount = 0;
  private readonly lagMs: number;
  private readonly now: () => number;
  /** Writes within the lag, oldest first. */
  private recent: RecentWrite[] = [];

  constructor(options: MemoryStoreOptions = {}) {
    this.lagMs = options.indexLagMs ?? 0;
    this.now = options.now ?? Date.now;
  }

  historySuffix(): string {
    return String(++this.historyCount).padStart(8, '0');
  }

  async writeItems(writes: ItemWrite[]): Promise<void> {
    const written = new Set<string>();
    for (const write of writes) {
      const key = itemKey(isUsageWrite(write) ? write.usage.key : (write.put as TableKey));
      // DynamoDB refuses a transaction that touches one item twice (ValidationException): a bug, not a lost race.
      if (written.has(key)) throw new Error(`a transaction cannot write ${key} twice`);
      written.add(key);
    }
    const items = writes.map((write) => {
      if (isUsageWrite(write)) return usageAfter(write.usage, this.items.get(itemKey(write.usage.key)));
      const stored = this.items.get(itemKey(write.put as TableKey));
      const holds = write.expectedVersion === 'any' || (write.expectedVersion === null ? stored === undefined : stored?.version === write.expectedVersion);
      return holds ? write.put : null;
    });
    if (items.some((item) => item === null)) throw new StaleWriteError('a record changed since it was read');
    for (const item of items) this.put(item!);
  }

  async getItem(key: TableKey): Promise<Item | undefined> {
    const item = this.items.get(itemKey(key));
    return item ? structuredClone(item) : undefined;
  }

  async putItems(items: Item[]): Promise<void> {
    for (const item of items) this.put(item);
  }

  async putIfAbsent(item: Item): Promise<boolean> {
    if (this.items.has(itemKey(item as TableKey))) return false;
    this.put(item);
    return true;
  }

  async getItems(keys: TableKey[], read: ItemRead = {}): Promise<Item[]> {
    return keys
      .map((key) => this.items.get(itemKey(key)))
      .filter((item) => item !== undefined)
      .map((item) => structuredClone(projected(item, read.attributes)));
  }

  async queryItems(query: ItemQuery, nextToken?: string): Promise<ItemPage> {
    const matching = this.matching(query);
    const current = this.lags(query) && query.index?.projection === 'KEYS_ONLY' && !query.entriesOnly;
    let from = 0;
    if (nextToken) {
      const start = decodePageToken(listingOf(query), nextToken);
      if (!this.isStartKeyOf(query, start)) throw invalidPageToken();
      const after = (item: Item) => compareByQuery(query, item, start) > 0;
      from = matching.findIndex(after);
      if (from < 0) from = matching.length;
    }
    const evaluated = query.limit ? matching.slice(from, from + query.limit) : matching.slice(from);
    // As DynamoDB: a page that stopped at Limit says where it stopped, even when nothing follows.
    const last = query.limit && evaluated.length === query.limit ? evaluated.at(-1) : undefined;
    const where = query.where;
    const found = evaluated.filter((item) => !where || item[where.attribute] === where.equals);
    return {
      // A keys-only index names items the store then reads as they are now (dynamo-items.ts): those that left it since are left out.
      items: (current ? found.flatMap((item) => this.stillIn(query, item)) : found).map((item) => structuredClone(projected(item, query.attributes))),
      nextToken: encodePageToken(listingOf(query), last && Object.fromEntries(keyAttributesOf(query).map((name) => [name, last[name]]))),
    };
  }

  async countItems(query: ItemQuery): Promise<number> {
    return this.matching(query).length;
  }

  /**
   * Write `item` over the one stored under its key, if `holds` of the stored one (undefined: none), keeping the stored
   * attributes it does not set: an UpdateItem's SET, guarded by its condition.
   */
  update(key: TableKey, holds: (stored: Item | undefined) => boolean, set: (stored: Item | undefined) => Item): void {
    const stored = this.items.get(itemKey(key));
    if (!holds(stored)) throw new StaleWriteError('a record changed since it was read');
    this.put({ ...set(stored), ...key });
  }

  /** Items in the query's table or index, in its order, that satisfy its key condition (as they were, if it lags). */
  private matching(query: ItemQuery): Item[] {
    const partition = partitionAttributeOf(query);
    const sort = sortAttributeOf(query);
    return [...(this.lags(query) ? this.lagged() : this.items).values()]
      .filter((item) => item[partition] === query.partition && typeof item[sort] === 'string' && satisfies(item[sort], query.sort))
      .sort((a, b) => compareByQuery(query, a, b));
  }

  /** DynamoDB refuses an ExclusiveStartKey that is not a key of this table or index within the key condition. */
  private isStartKeyOf(query: ItemQuery, start: Record<string, unknown>): boolean {
    const names = keyAttributesOf(query);
    const sortValue = start[sortAttributeOf(query)];
    return (
      Object.keys(start).length === names.length &&
      names.every((name) => typeof start[name] === 'string') &&
      start[partitionAttributeOf(query)] === query.partition &&
      satisfies(sortValue as string, query.sort)
    );
  }

  /** GSIs are never strongly consistent; the table is, when asked. */
  private lags(query: ItemQuery): boolean {
    return this.lagMs > 0 && (query.index !== undefined || !query.consistent);
  }

  /** The table as it was `lagMs` ago: each item written since, as it was before the first of those writes. */
  private lagged(): Map<string, Item> {
    this.forgetSettled();
    const then = new Map(this.items);
    const seen = new Set<string>();
    for (const write of this.recent) {
      if (seen.has(write.key)) continue;
      seen.add(write.key);
      if (write.before) then.set(write.key, write.before);
      else then.delete(write.key);
    }
    return then;
  }

  private stillIn(query: ItemQuery, entry: Item): Item[] {
    const item = this.items.get(itemKey(entry as TableKey));
    return item && item[partitionAttributeOf(query)] === query.partition ? [item] : [];
  }

  private forgetSettled(): void {
    const settled = this.now() - this.lagMs;
    if (this.recent.length > 0 && this.recent[0]!.at <= settled) this.recent = this.recent.filter((write) => write.at > settled);
  }

  private put(item: Item): void {
    for (const index of Object.values(indexes)) {
      for (const name of [index.pk, index.sk]) {
        // The table declares every index key as a string: anything else is a ValidationException there.
        if (name in item && item[name] !== undefined && typeof item[name] !== 'string') throw new Error(`index key ${name} must be a string`);
      }
    }
    const stored = withoutUndefined(item) as Item;
    const key = itemKey(stored as TableKey);
    if (this.lagMs > 0) {
      this.forgetSettled();
      this.recent.push({ at: this.now(), key, before: this.items.get(key) });
    }
    this.items.set(key, stored);
  }
}

const itemKey = (key: TableKey): string => JSON.stringify([key.pk, key.sk]);

function satisfies(value: string, condition: SortCondition | undefined): boolean {
  if (!condition) return true;
  if ('between' in condition) return value >= condition.between[0] && value <= condition.between[1];
  if ('atMost' in condition) return value <= condition.atMost;
  if ('atLeast' in condition) return value >= condition.atLeast;
  return value.startsWith(condition.beginsWith);
}

/** What the document client's marshalling (removeUndefinedValues) leaves of a value. */
function withoutUndefined(value: unknown): unknown {
  if (Array.isArray(value)) return value.filter((entry) => entry !== undefined).map(withoutUndefined);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, entry]) => entry !== undefined)
        .map(([name, entry]) => [name, withoutUndefined(entry)]),
    );
  }
  return value;
}

/** The item's keys and the attributes a query asked for (all, when it named none), as a ProjectionExpression reads. */
function projected(item: Item, attributes: readonly string[] | undefined): Item {
  if (!attributes) return item;
  return Object.fromEntries(Object.entries(item).filter(([name]) => name === 'pk' || name === 'sk' || attributes.includes(name)));
}
