import { GetCommand, PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { migrationKeys, pinnedOf, DATA_VERSION_KEY, LATEST_DATA_VERSION, type DataVersion } from '#store/data-version.ts';
import type { Item, TableKey } from '#store/item-access.ts';
import { checkpointOf, progressOf, type SegmentCheckpoint } from './progress.ts';
import { migrations } from './registry.ts';
import type { MigrationStatus } from './runner.ts';

/**
 * What the table says of its migrations: its data version, whether it is pinned, and each migration's progress item
 * with its segments' checkpoints. Reads and writes by key only, so the API, which shows and starts migrations but
 * never walks the table, carries none of the walk's code (runner.ts).
 */
export class MigrationLedger {
  protected readonly client: DynamoDBDocumentClient;
  protected readonly table: string;
  protected readonly now: () => Date;
  constructor(client: DynamoDBDocumentClient, table: string, now: () => Date = () => new Date()) {
    this.client = client;
    this.table = table;
    this.now = now;
  }

  async dataVersion(): Promise<DataVersion | null> {
    const found = await this.get(DATA_VERSION_KEY);
    if (!found) return null;
    const declared = found.declaredFor === undefined ? {} : { declaredFor: Number(found.declaredFor) };
    return { dataVersion: Number(found.dataVersion), updatedAt: String(found.updatedAt), version: Number(found.version), pinned: pinnedOf(found), ...declared };
  }

  /** The deploy is done: walks may start, and records are written in this release's layout (within DATA_VERSION_TTL_MS). */
  async unpin(): Promise<void> {
    const found = await this.dataVersion();
    if (found && !found.pinned) return;
    const next = {
      dataVersion: found?.dataVersion ?? 0,
      updatedAt: this.now().toISOString(),
      version: (found?.version ?? -1) + 1,
      pinned: false,
      declaredFor: LATEST_DATA_VERSION,
    };
    await this.client.send(
      new PutCommand({
        TableName: this.table,
        Item: { ...DATA_VERSION_KEY, ...next },
        ...(found
          ? { ConditionExpression: 'version = :expected', ExpressionAttributeValues: { ':expected': found.version } }
          : { ConditionExpression: 'attribute_not_exists(pk)' }),
      }),
    );
  }

  async status(): Promise<MigrationStatus> {
    const found = await this.dataVersion();
    const dataVersion = found?.dataVersion ?? 0;
    const items = await Promise.all(
      migrations.map(async (migration) => {
        const { head, segments } = await this.progressItems(migration.id);
        if (migration.id <= dataVersion && !head) return { id: migration.id, name: migration.name, state: 'done' as const, itemsDone: 0 };
        return progressOf(migration, head, segments, this.now());
      }),
    );
    return { dataVersion, latest: LATEST_DATA_VERSION, pinned: found ? found.pinned : dataVersion < LATEST_DATA_VERSION, items };
  }

  async progressItems(id: number): Promise<{ head: Item | undefined; segments: SegmentCheckpoint[] }> {
    const result = await this.client.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': migrationKeys.head(id).pk },
        ConsistentRead: true,
      }),
    );
    const items = result.Items ?? [];
    return {
      head: items.find((item) => item.sk === migrationKeys.head(id).sk),
      segments: items.filter((item) => String(item.sk).startsWith('SEGMENT#')).map(checkpointOf),
    };
  }

  async get(key: TableKey): Promise<Item | undefined> {
    return (await this.client.send(new GetCommand({ TableName: this.table, Key: key, ConsistentRead: true }))).Item;
  }

  async putIfAbsent(item: Item): Promise<boolean> {
    try {
      await this.client.send(new PutCommand({ TableName: this.table, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }));
      return true;
    } catch (error) {
      if ((error as Error).name === 'ConditionalCheckFailedException') return false;
      throw error;
    }
  }
}
