import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, PutCommand, QueryCommand, ScanCommand, TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { migrationKeys, LATEST_DATA_VERSION, type DataVersion } from '#store/data-version.ts';
import type { Item } from '#store/item-access.ts';
import { indexes } from '#store/table.ts';
import type { Change } from '#domain/core/change.ts';
import { heldWhole, quotaSetting, USAGE_SHARDS } from '#domain/reservations/quota-shards.ts';
import type { QuotaUsage } from '#domain/reservations/quotas.ts';
import { StaleWriteError } from '#store/port.ts';
import type { DueTimes } from '#store/port.ts';
import { migrateItem, type ItemMigration } from './item-migrations.ts';
import { checkpointOf, type MigrationProgress, type SegmentCheckpoint } from './progress.ts';
import { migrationOf, type Migration } from './registry.ts';
import { WriteBudget, writeUnitsOf } from './write-budget.ts';
import { MigrationJournal } from './journal.ts';

export interface MigrationSettings {
  /** Parallel Scan segments of a table walk. */
  segments: number;
  /** Write units a second the migration may spend. */
  writeUnitsPerSecond: number;
  /** How long a contract migration waits after the expand migration before it moved anything. */
  contractAfterMs: number;
  pageSize?: number;
}

export interface MigrationStatus {
  dataVersion: number;
  latest: number;
  /** The deploy is not declared done: records are written in the layout of the release before, and no walk starts. */
  pinned: boolean;
  items: MigrationProgress[];
}

export interface MigrationRun {
  dataVersion: number;
  /** Items this run walked. */
  itemsDone: number;
  /**
   * Why it stopped before the latest data version: its time was up, another runner holds the walk, a contract waits,
   * or the table is pinned until its deploy is declared done.
   */
  stoppedBy?: 'deadline' | 'held' | 'contract-wait' | 'pinned';
}

/** Runs the pending migrations until `deadlineMs` (epoch ms): where it stopped, and why. The sweep's to call. */
export interface MigrationRunner {
  run(settings: MigrationSettings, deadlineMs: number, holder: string): Promise<MigrationRun>;
}

/** What the runner needs of the store it migrates: the lease, the site items' copy (migration 1), the quotas (migration 4). */
export interface MigratedStore {
  takeLease(name: string, holder: string, until: string, now: string): Promise<boolean>;
  releaseLease(name: string, holder: string, now: string): Promise<void>;
  copyLegacySiteItems(): Promise<number>;
  getQuotaUsage(org: string, machineType: string): Promise<QuotaUsage>;
  commit(change: Change): Promise<void>;
}

const LEASE = 'migrations';

const CONFLICTS = new Set(['ConditionalCheckFailedException', 'TransactionCanceledException']);

/**
 * Runs the pending migrations of one table (registry.ts) for as long as it is given: each table walk in parallel
 * Scan segments, each segment's checkpoint written after every page, every item written conditionally on what it
 * was read as, and all of it under a write-unit cap. One runner at a time (a lease); one whose time is up leaves
 * its checkpoints for the next run (the sweep's), which goes on from there.
 */
export class TableMigrations implements MigrationRunner {
  private readonly client: DynamoDBDocumentClient;
  private readonly table: string;
  private readonly store: MigratedStore;
  private readonly due: DueTimes;
  private readonly now: () => Date;
  private readonly ledger: MigrationJournal;
  constructor(options: { client: DynamoDBDocumentClient; table: string; store: MigratedStore; due: DueTimes; now?: () => Date }) {
    this.client = options.client;
    this.table = options.table;
    this.store = options.store;
    this.due = options.due;
    this.now = options.now ?? (() => new Date());
    this.ledger = new MigrationJournal(options.client, options.table, this.now);
  }

  async run(settings: MigrationSettings, deadlineMs: number, holder: string): Promise<MigrationRun> {
    let itemsDone = 0;
    let version = await this.ledger.dataVersion();
    if (!version) {
      // No data version: a table release 0.1.0 made, unless it holds nothing yet (this release's own first start).
      const first = await this.client.send(new ScanCommand({ TableName: this.table, Limit: 1 }));
      if ((first.Items ?? []).length === 0 && (await this.ledger.markCurrent())) return { dataVersion: LATEST_DATA_VERSION, itemsDone };
      version = { dataVersion: 0, updatedAt: this.now().toISOString(), version: -1, pinned: true };
    }
    while (version.dataVersion < LATEST_DATA_VERSION) {
      const migration = migrationOf(version.dataVersion + 1)!;
      if (version.pinned && !migration.whilePinned) return { dataVersion: version.dataVersion, itemsDone, stoppedBy: 'pinned' };
      if (migration.kind === 'contract' && (await this.contractMustWait(migration, version, settings)))
        return { dataVersion: version.dataVersion, itemsDone, stoppedBy: 'contract-wait' };
      const now = this.now();
      if (!(await this.store.takeLease(LEASE, holder, new Date(Math.max(deadlineMs, now.getTime()) + 30_000).toISOString(), now.toISOString()))) {
        return { dataVersion: version.dataVersion, itemsDone, stoppedBy: 'held' };
      }
      try {
        const walked = await this.runOne(migration, settings, deadlineMs);
        itemsDone += walked.items;
        if (!walked.done) return { dataVersion: version.dataVersion, itemsDone, stoppedBy: 'deadline' };
        version = await this.ledger.advance(version, migration.id);
      } catch (error) {
        await this.ledger.update(migrationKeys.head(migration.id), { state: 'failed', error: (error as Error).message });
        throw error;
      } finally {
        await this.store.releaseLease(LEASE, holder, this.now().toISOString());
      }
    }
    return { dataVersion: version.dataVersion, itemsDone };
  }

  /** A contract waits for every invocation of the release before to be over, if the expand before it found its items. */
  private async contractMustWait(migration: Migration, version: DataVersion, settings: MigrationSettings): Promise<boolean> {
    const expand = await this.ledger.progressItems(migration.id - 1);
    const moved = expand.segments.reduce((sum, s) => sum + s.itemsMigrated, 0);
    return moved > 0 && Date.parse(version.updatedAt) + settings.contractAfterMs > this.now().getTime();
  }

  private async runOne(migration: Migration, settings: MigrationSettings, deadlineMs: number): Promise<{ done: boolean; items: number }> {
    const segments = migration.walk === 'scan' ? settings.segments : 1;
    await this.ledger.putIfAbsent({
      ...migrationKeys.head(migration.id),
      entity: 'migration',
      id: migration.id,
      name: migration.name,
      state: 'running',
      segments,
      startedAt: this.now().toISOString(),
      ...(migration.walk === 'scan' ? { itemsTotal: await this.itemCount() } : {}),
    });
    await this.ledger.update(migrationKeys.head(migration.id), { state: 'running' }, ['error']);
    if (migration.walk === 'site') {
      const copied = await this.store.copyLegacySiteItems();
      await this.ledger.saveCheckpoint(migration.id, { segment: 0, startKey: null, done: true, itemsDone: copied, itemsMigrated: copied, version: 0 }, null);
      await this.ledger.finish(migration.id);
      return { done: true, items: copied };
    }
    const head = await this.ledger.get(migrationKeys.head(migration.id));
    const total = Number(head?.segments ?? segments);
    const budget = new WriteBudget(settings.writeUnitsPerSecond);
    const walked = await Promise.all(
      Array.from({ length: total }, (_, segment) => this.walkSegment(migration, segment, total, budget, deadlineMs, settings.pageSize ?? 100)),
    );
    const done = walked.every((w) => w.done);
    if (done) await this.ledger.finish(migration.id);
    return { done, items: walked.reduce((sum, w) => sum + w.items, 0) };
  }

  private async walkSegment(migration: Migration, segment: number, total: number, budget: WriteBudget, deadlineMs: number, pageSize: number) {
    const stored = await this.ledger.get(migrationKeys.segment(migration.id, segment));
    let checkpoint: SegmentCheckpoint = stored ? checkpointOf(stored) : { segment, startKey: null, done: false, itemsDone: 0, itemsMigrated: 0, version: -1 };
    let items = 0;
    while (!checkpoint.done && Date.now() < deadlineMs) {
      const page = await this.client.send(
        new ScanCommand({
          TableName: this.table,
          Segment: segment,
          TotalSegments: total,
          Limit: pageSize,
          ...(checkpoint.startKey ? { ExclusiveStartKey: checkpoint.startKey } : {}),
        }),
      );
      let migrated = 0;
      for (const item of page.Items ?? []) if (await this.migrateOne(item, migration.kind === 'contract', budget)) migrated++;
      items += page.Items?.length ?? 0;
      const next: SegmentCheckpoint = {
        segment,
        startKey: page.LastEvaluatedKey ?? null,
        done: !page.LastEvaluatedKey,
        itemsDone: checkpoint.itemsDone + (page.Items?.length ?? 0),
        itemsMigrated: checkpoint.itemsMigrated + migrated,
        version: checkpoint.version + 1,
      };
      await this.ledger.saveCheckpoint(migration.id, next, checkpoint.version < 0 ? null : checkpoint.version);
      checkpoint = next;
    }
    return { done: checkpoint.done, items };
  }

  /** One item brought into the current layout; a write that lost to a newer one reads the item again and decides again. */
  private async migrateOne(scanned: Item, contract: boolean, budget: WriteBudget): Promise<boolean> {
    let item: Item | undefined = scanned;
    for (let attempt = 0; attempt < 5 && item; attempt++) {
      const migration = await migrateItem(item, { due: this.due, membersOf: (id) => this.membersOf(id) }, contract);
      if (!migration) return false;
      try {
        await this.write(migration, budget);
        return true;
      } catch (error) {
        if (!CONFLICTS.has((error as Error).name)) throw error;
        item = await this.ledger.get({ pk: String(item.pk), sk: String(item.sk) });
      }
    }
    return false;
  }

  private async write(migration: ItemMigration, budget: WriteBudget): Promise<void> {
    await budget.take(writeUnitsOfMigration(migration));
    if (migration.dealQuota) await this.dealHeldQuota(migration.dealQuota.org, migration.dealQuota.machineType);
    else await writeMigration(this.client, this.table, migration);
  }

  /** A quota usage shard 0 holds whole, dealt over the (org, type)'s shards; a count moved meanwhile: read again. */
  private async dealHeldQuota(org: string, machineType: string): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const usage = await this.store.getQuotaUsage(org, machineType);
      if (!heldWhole(usage)) return;
      try {
        await this.store.commit({ quotas: [quotaSetting({ ...usage, shardable: true }, usage.quota!)], history: [] });
        return;
      } catch (error) {
        if (!(error instanceof StaleWriteError)) throw error;
      }
    }
    throw new StaleWriteError(`org ${org}'s ${machineType} usage kept changing while its quota was dealt over its shards`);
  }

  private async membersOf(metaInstanceId: string): Promise<string[]> {
    const ids: string[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: indexes.members.name,
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: { '#pk': indexes.members.pk },
          ExpressionAttributeValues: { ':pk': `META#${metaInstanceId}` },
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      ids.push(...(page.Items ?? []).map((item) => String(item.id)));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return ids;
  }

  private async itemCount(): Promise<number> {
    const described = await this.client.send(new DescribeTableCommand({ TableName: this.table }));
    return described.Table?.ItemCount ?? 0;
  }
}

/** The write units one item's migration spends (write-budget.ts): a transaction when it also counts usage. */
export const writeUnitsOfMigration = (migration: ItemMigration): number =>
  migration.dealQuota
    ? 2 * USAGE_SHARDS
    : migration.remove
      ? 1
      : migration.countUsage
        ? writeUnitsOf(migration.put, true) + 2
        : writeUnitsOf(migration.put, false);

/**
 * One item's migration as DynamoDB requests: its removal, its conditional rewrite, or both the rewrite and its org's
 * usage count in one transaction. The bench sends the same requests raw for its floor.
 */
export async function writeMigration(client: DynamoDBDocumentClient, table: string, migration: ItemMigration): Promise<void> {
  if (migration.remove) {
    await client.send(new DeleteCommand({ TableName: table, Key: migration.remove }));
    return;
  }
  const put = {
    TableName: table,
    Item: migration.put!,
    ConditionExpression: migration.expectedVersion === undefined ? 'attribute_exists(pk)' : 'version = :expected',
    ...(migration.expectedVersion === undefined ? {} : { ExpressionAttributeValues: { ':expected': migration.expectedVersion } }),
  };
  const usage = migration.countUsage;
  if (!usage) {
    await client.send(new PutCommand(put));
    return;
  }
  await client.send(
    new TransactWriteCommand({
      TransactItems: [
        { Put: put },
        {
          Update: {
            TableName: table,
            Key: usage.key,
            UpdateExpression: 'SET entity = :entity, org = :org, machineType = :type ADD used :one',
            ExpressionAttributeValues: { ':entity': 'quota-usage', ':org': usage.org, ':type': usage.machineType, ':one': 1 },
          },
        },
      ],
    }),
  );
}
