import { GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { migrationKeys, pinnedOf, DATA_VERSION_KEY, LATEST_DATA_VERSION, type DataVersion } from '#store/data-version.ts';
import type { Item, TableKey } from '#store/item-access.ts';
import { checkpointOf, progressOf, type SegmentCheckpoint } from './progress.ts';
import { migrations } from './registry.ts';
import type { MigrationStatus } from './runner.ts';

const withoutNullStart = ({ startKey, ...rest }: SegmentCheckpoint): Omit<SegmentCheckpoint, 'startKey'> & { startKey?: Record<string, unknown> } =>
  startKey ? { ...rest, startKey } : rest;

/**
 * What the table says of its migrations: its data version, whether it is pinned, and each migration's progress item
 * with its segments' checkpoints. Reads and writes by key only, so the API, which shows and starts migrations but
 * never walks the table, carries none of the walk's code (runner.ts).
 */
export class MigrationLedger {
  private readonly client: DynamoDBDocumentClient;
  private readonly table: string;
  private readonly now: () => Date;
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

  /** A table created by this release: born at the latest data version, with nothing to migrate. */
  async markCurrent(): Promise<boolean> {
    const now = this.now().toISOString();
    return this.putIfAbsent({
      ...DATA_VERSION_KEY,
      dataVersion: LATEST_DATA_VERSION,
      updatedAt: now,
      version: 0,
      pinned: false,
      declaredFor: LATEST_DATA_VERSION,
    });
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

  async advance(version: DataVersion, to: number): Promise<DataVersion> {
    const declared = version.declaredFor === undefined ? {} : { declaredFor: version.declaredFor };
    const next = { dataVersion: to, updatedAt: this.now().toISOString(), version: version.version + 1, pinned: version.pinned, ...declared };
    await this.client.send(
      new PutCommand({
        TableName: this.table,
        Item: { ...DATA_VERSION_KEY, ...next },
        ConditionExpression: version.version < 0 ? 'attribute_not_exists(pk)' : 'version = :expected',
        ...(version.version < 0 ? {} : { ExpressionAttributeValues: { ':expected': version.version } }),
      }),
    );
    return next;
  }

  finish(id: number): Promise<void> {
    return this.update(migrationKeys.head(id), { state: 'done', finishedAt: this.now().toISOString() });
  }

  async saveCheckpoint(id: number, checkpoint: SegmentCheckpoint, expected: number | null): Promise<void> {
    await this.client.send(
      new PutCommand({
        TableName: this.table,
        Item: { ...migrationKeys.segment(id, checkpoint.segment), entity: 'migration-segment', ...withoutNullStart(checkpoint) },
        // Only the runner holding the lease writes a checkpoint; the guard keeps a runner whose lease ran out from
        // moving one back.
        ...(expected === null ? {} : { ConditionExpression: 'version = :expected', ExpressionAttributeValues: { ':expected': expected } }),
      }),
    );
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

  async update(key: TableKey, set: Record<string, unknown>, remove: string[] = []): Promise<void> {
    const names = Object.keys(set);
    const removing = remove.length ? ` REMOVE ${remove.map((_, i) => `#r${i}`).join(', ')}` : '';
    await this.client.send(
      new UpdateCommand({
        TableName: this.table,
        Key: key,
        UpdateExpression: `SET ${names.map((_name, i) => `#n${i} = :v${i}`).join(', ')}${removing}`,
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: {
          ...Object.fromEntries(names.map((name, i) => [`#n${i}`, name])),
          ...Object.fromEntries(remove.map((name, i) => [`#r${i}`, name])),
        },
        ExpressionAttributeValues: Object.fromEntries(names.map((name, i) => [`:v${i}`, set[name]])),
      }),
    );
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
