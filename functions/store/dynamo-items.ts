import { randomUUID } from 'node:crypto';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { isUsageWrite, usageUpdateOf } from '#store/aggregates/quota-usage-items.ts';
import { chunksOf, inParallel } from '#store/in-parallel.ts';
import {
  listingOf,
  partitionAttributeOf,
  sortAttributeOf,
  tableKeyOf,
  type Item,
  type ItemAccess,
  type ItemPage,
  type ItemQuery,
  type ItemRead,
  type ItemWrite,
  type TableKey,
} from '#store/item-access.ts';
import type { MigrationLedger } from '#store/migrations/ledger.ts';
import { decodePageToken, encodePageToken, invalidPageToken } from '#store/paging.ts';
import { StaleWriteError } from '#store/port.ts';
import { retryThrottled, throttleDelayMs, untilProcessed } from '#store/throttle.ts';

/** DynamoDB's limits of keys per BatchGetItem and of items per BatchWriteItem. */
export const BATCH_GET_LIMIT = 100;
export const BATCH_WRITE_LIMIT = 25;
/** BatchWriteItem requests in flight at once. */
export const BATCH_WRITES_IN_FLIGHT = 8;

/** The table primitives on DynamoDB: every decision one conditional write (see writeItems). */
export class DynamoItems implements ItemAccess {
  private readonly client: DynamoDBDocumentClient;
  private readonly table: string;
  private readonly migrations: MigrationLedger;

  constructor(client: DynamoDBDocumentClient, table: string, migrations: MigrationLedger) {
    this.client = client;
    this.table = table;
    this.migrations = migrations;
  }

  historySuffix(): string {
    return randomUUID().slice(0, 8);
  }

  /** One conditional transaction; a change of one item is one conditional PutItem: as atomic, at half the price. */
  async writeItems(writes: ItemWrite[]): Promise<void> {
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

  async getItem(key: TableKey): Promise<Item | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.table, Key: key, ConsistentRead: true }));
    return result.Item;
  }

  putIfAbsent(item: Item): Promise<boolean> {
    return this.migrations.putIfAbsent(item);
  }

  async putItems(items: Item[]): Promise<void> {
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
  async getItems(keys: TableKey[], read: ItemRead = {}): Promise<Item[]> {
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

  async queryItems(query: ItemQuery, nextToken?: string): Promise<ItemPage> {
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

  async countItems(query: ItemQuery): Promise<number> {
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
  async guarded(write: () => Promise<unknown>): Promise<void> {
    try {
      await retryThrottled(write);
    } catch (error) {
      if (isLostRace(error)) throw new StaleWriteError('a record changed since it was read');
      throw error;
    }
  }
}

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** One write of a transaction: a guarded put, or a usage counter moved in place (quota-usage.ts). */
export function transactItemOf(table: string, write: ItemWrite): TransactItem {
  if (isUsageWrite(write)) return usageUpdateOf(table, write);
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
