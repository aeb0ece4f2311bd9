import { randomUUID } from 'node:crypto';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import type { SiteHeartbeat } from '#domain/machines/heartbeat.ts';
import { chunksOf, inParallel } from '#store/in-parallel.ts';
import { retryThrottled, throttleDelayMs, untilProcessed } from '#store/throttle.ts';
import { keys } from '#store/items.ts';
import { LEGACY_SITE_ITEMS } from '#store/legacy-layout.ts';
import {
  ItemStore,
  listingOf,
  tableKeyOf,
  partitionAttributeOf,
  sortAttributeOf,
  type Item,
  type ItemPage,
  type ItemRead,
  type ItemQuery,
  type ItemWrite,
  isUsageWrite,
  type TableKey,
} from '#store/item-store.ts';
import { StaleWriteError, type DueTimes } from '#store/port.ts';
import { decodePageToken, encodePageToken, invalidPageToken } from '#store/paging.ts';
import { MigrationLedger } from '#store/migrations/ledger.ts';
import type { MigrationStatus } from '#store/migrations/runner.ts';

/** The site heartbeat's 0.1.0 key, kept up to date while the table is pinned to that layout (legacy-layout.ts). */
const LEGACY_HEARTBEAT = LEGACY_SITE_ITEMS.find((site) => site.name === 'HEARTBEAT')!.legacy;
const withoutUndefined = (record: object) => Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined));

/** DynamoDB's limits of keys per BatchGetItem and of items per BatchWriteItem. */
export const BATCH_GET_LIMIT = 100;
export const BATCH_WRITE_LIMIT = 25;
/** BatchWriteItem requests in flight at once. */
export const BATCH_WRITES_IN_FLIGHT = 8;

/** The deployed store: one DynamoDB table (table.ts), every decision one conditional write (see writeItems). */
export class DynamoFleetStore extends ItemStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly table: string;

  private readonly migrations: MigrationLedger;

  constructor(client: DynamoDBDocumentClient, table: string, due: DueTimes) {
    super(due);
    this.client = client;
    this.table = table;
    this.migrations = new MigrationLedger(client, table);
  }

  migrationStatus(): Promise<MigrationStatus> {
    return this.migrations.status();
  }

  async startMigrations(): Promise<MigrationStatus> {
    await this.migrations.unpin();
    return this.migrations.status();
  }

  /** A table this release just created: nothing in it to migrate, ever (local/tables.ts). */
  markCurrentLayout(): Promise<boolean> {
    return this.migrations.markCurrent();
  }

  /** Store the agent's roster time, guarded so concurrent beats cannot interleave. */
  async putSiteHeartbeat(before: SiteHeartbeat | null, after: Omit<SiteHeartbeat, 'version'>): Promise<SiteHeartbeat> {
    const version = (before?.version ?? 0) + 1;
    await this.guarded(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.siteHeartbeat,
          UpdateExpression: `SET rosterSeenAt = :at, machineCount = :count, version = :next${after.parts ? ', parts = :parts' : ' REMOVE parts'}`,
          ConditionExpression: before ? 'version = :expected' : 'attribute_not_exists(version)',
          ExpressionAttributeValues: {
            ':at': after.rosterSeenAt,
            ':count': after.machineCount,
            ':next': version,
            ...(after.parts ? { ':parts': after.parts } : {}),
            ...(before ? { ':expected': before.version } : {}),
          },
        }),
      ),
    );
    if (await this.legacyWrites()) {
      await this.client.send(new PutCommand({ TableName: this.table, Item: { ...LEGACY_HEARTBEAT, ...withoutUndefined(after), version } }));
    }
    return { ...after, version };
  }

  protected historySuffix(): string {
    return randomUUID().slice(0, 8);
  }

  /** One conditional transaction; a change of one item is one conditional PutItem: as atomic, at half the price. */
  protected async writeItems(writes: ItemWrite[]): Promise<void> {
    const items = writes.map((write) => transactItemOf(this.table, write));
    await this.guarded(() => {
      const [only] = items;
      if (items.length === 1 && only?.Put) return this.client.send(new PutCommand(only.Put));
      const send = () => this.client.send(new TransactWriteCommand({ TransactItems: items }));
      // Transactions of one org's creates all move its usage counter: one that collided with another is sent again
      // (its guards are checked afresh), for a short while, before it counts as a lost race. Any other collision is
      // a lost race at once, for its caller to decide again.
      return writes.some(isUsageWrite) ? retryConflicts(send) : send();
    });
  }

  protected async getItem(key: TableKey): Promise<Item | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.table, Key: key, ConsistentRead: true }));
    return result.Item;
  }

  protected putIfAbsent(item: Item): Promise<boolean> {
    return this.migrations.putIfAbsent(item);
  }

  protected async putItems(items: Item[]): Promise<void> {
    await inParallel(chunksOf(items, BATCH_WRITE_LIMIT), BATCH_WRITES_IN_FLIGHT, (chunk) => this.batchWrite(chunk));
  }

  /** One BatchWriteItem, sent again for whatever DynamoDB left unprocessed (throttling), for a bounded time. */
  private async batchWrite(items: Item[]): Promise<void> {
    const requests = items.map((item) => ({ PutRequest: { Item: item } }));
    await untilProcessed(
      requests,
      (pending) => this.client.send(new BatchWriteCommand({ RequestItems: { [this.table]: pending } })),
      (result) => (result.UnprocessedItems?.[this.table] ?? []) as typeof requests,
    );
  }

  /** Strongly consistent unless told; an index's follow-up read need not be (the index itself lags), at half the price. */
  protected async getItems(keys: TableKey[], read: ItemRead = {}): Promise<Item[]> {
    return (await Promise.all(chunksOf(keys, BATCH_GET_LIMIT).map((chunk) => this.batchGet(chunk, read)))).flat();
  }

  /** One BatchGetItem, asked again for whatever DynamoDB left unprocessed (throttling, the 16 MB response cap). */
  private async batchGet(keys: TableKey[], { consistent = true, attributes }: ItemRead): Promise<Item[]> {
    const projected = attributes && ['pk', 'sk', ...attributes];
    const projection = projected
      ? {
          ProjectionExpression: projected.map((_, at) => `#p${at}`).join(', '),
          ExpressionAttributeNames: Object.fromEntries(projected.map((name, at) => [`#p${at}`, name])),
        }
      : {};
    const results = await untilProcessed(
      keys as Record<string, unknown>[],
      (pending) => this.client.send(new BatchGetCommand({ RequestItems: { [this.table]: { Keys: pending, ConsistentRead: consistent, ...projection } } })),
      (result) => result.UnprocessedKeys?.[this.table]?.Keys ?? [],
    );
    return results.flatMap((result) => result.Responses?.[this.table] ?? []);
  }

  protected async queryItems(query: ItemQuery, nextToken?: string): Promise<ItemPage> {
    const result = await this.client
      .send(
        new QueryCommand({
          ...this.queryInput(query),
          ...(query.limit ? { Limit: query.limit } : {}),
          ...(nextToken ? { ExclusiveStartKey: decodePageToken(listingOf(query), nextToken) } : {}),
        }),
      )
      .catch((error: Error) => {
        // A well-formed token from another listing is still not this listing's token: bad input, not a fault.
        if (nextToken && error.name === 'ValidationException') throw invalidPageToken();
        throw error;
      });
    const found = result.Items ?? [];
    const items = query.index?.projection === 'KEYS_ONLY' && !query.entriesOnly ? await this.itemsOfKeys(found, query.index.pk, query.partition) : found;
    return { items, nextToken: encodePageToken(listingOf(query), result.LastEvaluatedKey) };
  }

  /**
   * The items a keys-only index page names, in its order, as the table holds them now: those that left the index
   * since (the index lags the table) are left out, as the index itself will soon leave them out.
   */
  private async itemsOfKeys(entries: Item[], partitionAttribute: string, partition: string): Promise<Item[]> {
    const keys = entries.map((entry) => ({ pk: String(entry.pk), sk: String(entry.sk) }));
    const byKey = new Map((await this.getItems(keys, { consistent: false })).map((item) => [tableKeyOf(item), item]));
    return entries.flatMap((entry) => {
      const item = byKey.get(tableKeyOf(entry));
      return item && item[partitionAttribute] === partition ? [item] : [];
    });
  }

  protected async countItems(query: ItemQuery): Promise<number> {
    let count = 0;
    let start: Record<string, unknown> | undefined;
    do {
      const result = await this.client.send(new QueryCommand({ ...this.queryInput(query), Select: 'COUNT', ...(start ? { ExclusiveStartKey: start } : {}) }));
      count += result.Count ?? 0;
      start = result.LastEvaluatedKey;
    } while (start);
    return count;
  }

  private queryInput(query: ItemQuery): QueryCommandInput {
    const names: Record<string, string> = { '#pk': partitionAttributeOf(query) };
    const values: Record<string, unknown> = { ':pk': query.partition };
    let condition = '#pk = :pk';
    if (query.sort) {
      names['#sk'] = sortAttributeOf(query);
      if ('between' in query.sort) {
        condition += ' AND #sk BETWEEN :low AND :high';
        [values[':low'], values[':high']] = query.sort.between;
      } else if ('atMost' in query.sort) {
        condition += ' AND #sk <= :high';
        values[':high'] = query.sort.atMost;
      } else if ('atLeast' in query.sort) {
        condition += ' AND #sk >= :low';
        values[':low'] = query.sort.atLeast;
      } else {
        condition += ' AND begins_with(#sk, :prefix)';
        values[':prefix'] = query.sort.beginsWith;
      }
    }
    if (query.where) {
      names['#where'] = query.where.attribute;
      values[':where'] = query.where.equals;
    }
    const projected = query.attributes && ['pk', 'sk', ...query.attributes];
    for (const [at, attribute] of (projected ?? []).entries()) names[`#p${at}`] = attribute;
    return {
      TableName: this.table,
      ...(query.index ? { IndexName: query.index.name } : {}),
      KeyConditionExpression: condition,
      ...(query.where ? { FilterExpression: '#where = :where' } : {}),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ...(query.descending ? { ScanIndexForward: false } : {}),
      ...(query.consistent ? { ConsistentRead: true } : {}),
      ...(projected ? { ProjectionExpression: projected.map((_, at) => `#p${at}`).join(', ') } : {}),
    };
  }

  /** A conditional write: a lost race is a StaleWriteError, a throttle is retried (store/throttle.ts). */
  private async guarded(write: () => Promise<unknown>): Promise<void> {
    try {
      await retryThrottled(write);
    } catch (error) {
      if (isLostRace(error)) throw new StaleWriteError('a record changed since it was read');
      throw error;
    }
  }
}

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** One write of a transaction: a guarded put, or a usage counter moved in place (usageAfter in item-store.ts is its rule in memory). */
export function transactItemOf(table: string, write: ItemWrite): TransactItem {
  if (!isUsageWrite(write)) {
    return {
      Put: {
        TableName: table,
        Item: write.put,
        ...(write.expectedVersion === 'any'
          ? {}
          : write.expectedVersion === null
            ? { ConditionExpression: 'attribute_not_exists(pk)' }
            : { ConditionExpression: 'version = :expected', ExpressionAttributeValues: { ':expected': write.expectedVersion } }),
      },
    };
  }
  const { usage } = write;
  const names: Record<string, string> = { '#entity': 'entity', '#org': 'org', '#type': 'machineType', '#used': 'used' };
  const values: Record<string, unknown> = { ':entity': 'quota-usage', ':org': usage.org, ':type': usage.machineType, ':zero': 0, ':by': usage.by };
  const sets = ['#entity = :entity', '#org = :org', '#type = :type', '#used = if_not_exists(#used, :zero) + :by'];
  const removes: string[] = [];
  const conditions: string[] = [];
  const setOrRemove = (name: string, attribute: string, value: number | null | undefined) => {
    if (value === undefined) return;
    names[name] = attribute;
    if (value === null) {
      removes.push(name);
    } else {
      values[`:${attribute}`] = value;
      sets.push(`${name} = :${attribute}`);
    }
  };
  if (usage.shard !== 0) setOrRemove('#shard', 'shard', usage.shard);
  setOrRemove('#quota', 'quota', usage.setQuota);
  setOrRemove('#total', 'quotaTotal', usage.setTotal);
  if (usage.guard === null) {
    names['#quota'] = 'quota';
    conditions.push('attribute_not_exists(#quota)');
  } else if (usage.guard !== undefined) {
    names['#quota'] = 'quota';
    values[':guard'] = usage.guard;
    values[':most'] = usage.guard - usage.by;
    conditions.push('#quota = :guard AND #used <= :most');
  }
  if (usage.expectUsed !== undefined) {
    values[':expected'] = usage.expectUsed;
    conditions.push(usage.expectUsed === 0 ? '(attribute_not_exists(#used) OR #used = :expected)' : '#used = :expected');
  }
  return {
    Update: {
      TableName: table,
      Key: usage.key,
      UpdateExpression: `SET ${sets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`,
      ...(conditions.length > 0 ? { ConditionExpression: conditions.join(' AND ') } : {}),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
}

/** How long a transaction that only collided with another (no guard failed) is sent again. */
const CONFLICT_RETRY_MS = 1_000;

async function retryConflicts<T>(send: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + CONFLICT_RETRY_MS;
  for (let attempt = 0; ; attempt++) {
    try {
      return await send();
    } catch (error) {
      const delay = throttleDelayMs(attempt);
      if (!onlyCollided(error) || Date.now() + delay > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

/** Cancelled because another transaction held one of its items, and for nothing else (no guard failed). */
function onlyCollided(error: unknown): boolean {
  if (!(error instanceof TransactionCanceledException) && (error as Error).name !== 'TransactionCanceledException') return false;
  const codes = ((error as TransactionCanceledException).CancellationReasons ?? []).map((r) => r.Code);
  return codes.includes('TransactionConflict') && !codes.includes('ConditionalCheckFailed');
}

function isLostRace(error: unknown): boolean {
  if (error instanceof TransactionCanceledException || (error as Error).name === 'TransactionCanceledException') {
    const reasons = (error as TransactionCanceledException).CancellationReasons ?? [];
    return reasons.some((r) => r.Code === 'ConditionalCheckFailed' || r.Code === 'TransactionConflict');
  }
  return (error as Error).name === 'TransactionConflictException' || (error as Error).name === 'ConditionalCheckFailedException';
}
