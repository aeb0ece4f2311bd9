import { randomUUID } from 'node:crypto';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { ROSTER_RESET, type SiteHeartbeat } from '#domain/heartbeat.ts';
import { keys } from './items.ts';
import { ItemStore, partitionAttributeOf, sortAttributeOf, type Item, type ItemPage, type ItemQuery, type ItemWrite, type TableKey } from './item-store.ts';
import { StaleWriteError } from './port.ts';
import { decodePageToken, encodePageToken, invalidPageToken } from './paging.ts';

type TransactItems = NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']>;

/** The deployed store: one DynamoDB table (table.ts), every decision one conditional transaction. */
export class DynamoFleetStore extends ItemStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly table: string;

  constructor(client: DynamoDBDocumentClient, table: string) {
    super();
    this.client = client;
    this.table = table;
  }

  /** Store the agent's roster time (and digest when it changed), guarded so concurrent beats cannot interleave. */
  async putSiteHeartbeat(before: SiteHeartbeat | null, after: Omit<SiteHeartbeat, 'version'>): Promise<SiteHeartbeat> {
    const version = (before?.version ?? 0) + 1;
    await this.guarded(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.siteHeartbeat,
          UpdateExpression: `SET rosterSeenAt = :at, digest = :digest, machineCount = :count, version = :next${after.reconcilingUntil ? ', reconcilingUntil = :until' : ' REMOVE reconcilingUntil'}`,
          ConditionExpression: before ? 'version = :expected' : 'attribute_not_exists(version)',
          ExpressionAttributeValues: {
            ':at': after.rosterSeenAt,
            ':digest': after.digest,
            ':count': after.machineCount,
            ':next': version,
            ...(after.reconcilingUntil ? { ':until': after.reconcilingUntil } : {}),
            ...(before ? { ':expected': before.version } : {}),
          },
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
    return { ...after, version };
  }

  protected historySuffix(): string {
    return randomUUID().slice(0, 8);
  }

  protected async writeItems(writes: ItemWrite[]): Promise<void> {
    const items: TransactItems = writes.map((write) =>
      'resetRoster' in write
        ? {
            Update: {
              TableName: this.table,
              Key: keys.siteHeartbeat,
              // Bumping the version makes a heartbeat that read the old digest lose its write instead of restoring it.
              UpdateExpression: 'SET digest = :none ADD version :one',
              ExpressionAttributeValues: { ':none': ROSTER_RESET, ':one': 1 },
            },
          }
        : {
            Put: {
              TableName: this.table,
              Item: write.put,
              ConditionExpression: write.expectedVersion === null ? 'attribute_not_exists(pk)' : 'version = :expected',
              ...(write.expectedVersion === null ? {} : { ExpressionAttributeValues: { ':expected': write.expectedVersion } }),
            },
          },
    );
    await this.guarded(() => this.client.send(new TransactWriteCommand({ TransactItems: items, ReturnConsumedCapacity: 'TOTAL' })));
  }

  protected async getItem(key: TableKey): Promise<Item | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.table, Key: key, ConsistentRead: true, ReturnConsumedCapacity: 'TOTAL' }));
    return result.Item;
  }

  protected async queryItems(query: ItemQuery, nextToken?: string): Promise<ItemPage> {
    const result = await this.client
      .send(
        new QueryCommand({
          ...this.queryInput(query),
          ...(query.limit ? { Limit: query.limit } : {}),
          ...(nextToken ? { ExclusiveStartKey: decodePageToken(nextToken) } : {}),
          ReturnConsumedCapacity: 'TOTAL',
        }),
      )
      .catch((error: Error) => {
        // A well-formed token from another listing is still not this listing's token: bad input, not a fault.
        if (nextToken && error.name === 'ValidationException') throw invalidPageToken();
        throw error;
      });
    return { items: result.Items ?? [], nextToken: encodePageToken(result.LastEvaluatedKey) };
  }

  protected async countItems(query: ItemQuery): Promise<number> {
    let count = 0;
    let start: Record<string, unknown> | undefined;
    do {
      const result = await this.client.send(
        new QueryCommand({ ...this.queryInput(query), Select: 'COUNT', ...(start ? { ExclusiveStartKey: start } : {}) }),
      );
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
      } else {
        condition += ' AND begins_with(#sk, :prefix)';
        values[':prefix'] = query.sort.beginsWith;
      }
    }
    if (query.where) {
      names['#where'] = query.where.attribute;
      values[':where'] = query.where.equals;
    }
    return {
      TableName: this.table,
      ...(query.index ? { IndexName: query.index.name } : {}),
      KeyConditionExpression: condition,
      ...(query.where ? { FilterExpression: '#where = :where' } : {}),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ...(query.descending ? { ScanIndexForward: false } : {}),
      ...(query.consistent ? { ConsistentRead: true } : {}),
    };
  }

  private async guarded(write: () => Promise<unknown>): Promise<void> {
    try {
      await write();
    } catch (error) {
      if (isLostRace(error)) throw new StaleWriteError('a record changed since it was read');
      throw error;
    }
  }
}

function isLostRace(error: unknown): boolean {
  if (error instanceof TransactionCanceledException || (error as Error).name === 'TransactionCanceledException') {
    const reasons = (error as TransactionCanceledException).CancellationReasons ?? [];
    return reasons.some((r) => r.Code === 'ConditionalCheckFailed' || r.Code === 'TransactionConflict');
  }
  return (error as Error).name === 'TransactionConflictException' || (error as Error).name === 'ConditionalCheckFailedException';
}
