import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Instance, Machine } from '#domain/core/model.ts';
import { startDynamoDbLocal } from '#local/dynamodb-local.ts';
import { createTables } from '#local/tables.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import { createDocumentClient } from '#store/client.ts';
import { DATA_VERSION_KEY } from '#store/data-version.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { inParallel, chunksOf } from '#store/in-parallel.ts';
import { instanceItem } from '#store/aggregates/instance-items.ts';
import { machineItem } from '#store/aggregates/machine-items.ts';
import { inLegacyLayout } from '#store/legacy-layout.ts';
import { migrateItem, type ItemMigration } from '#store/migrations/item-migrations.ts';
import { TableMigrations, writeMigration } from '#store/migrations/runner.ts';
import { ratio, round } from './stats.ts';

// The data migration from release 0.1.0's layout (store/migrations, migration 2) on a table of `machines` machines
// and as many instances, half of them live. Judged: items a second against the floor, the same writes (each item's
// rewrite, and a live instance's usage count with it) sent raw at the migration's parallelism on a fresh DynamoDB
// Local. The cap on write units is lifted here: the bench measures the walk's own cost, the cap is the site's choice.

export interface MigrationBenchOptions {
  machines: number;
  segments: number;
}

export const defaultMigrationOptions: MigrationBenchOptions = { machines: 2_000, segments: 4 };

const AT = '2026-01-01T00:00:00.000Z';

function legacyTable(machines: number): Record<string, unknown>[] {
  const items: Record<string, unknown>[] = [];
  for (let i = 0; i < machines; i++) {
    const id = `gb200-${String(i).padStart(6, '0')}`;
    const rack = `rack-${String(Math.floor(i / 8)).padStart(5, '0')}`;
    const live = i % 2 === 0;
    const machine: Machine = {
      id,
      machineType: 'gb200',
      rack,
      state: live ? 'Assigned' : 'Ready',
      labels: {},
      healthOverrides: [],
      heartbeatLive: true,
      version: 3,
      createdAt: AT,
      updatedAt: AT,
    };
    const instance: Instance = {
      id: `i-${String(i).padStart(6, '0')}`,
      org: `org-${i % 10}`,
      name: `bench-${i}`,
      machineId: id,
      machineType: 'gb200',
      status: live ? 'Ready' : 'Terminated',
      labels: {},
      createAttempts: 1,
      siteName: `bench-${i}`,
      creation: { clientToken: `token-${i}`, phase: 'done' },
      createdBy: 'bench',
      createdAt: AT,
      updatedAt: AT,
      version: 2,
    };
    for (const item of [machineItem(machine, undefined), instanceItem(instance, undefined)]) {
      const { quotaCounted: _counted, ...legacy } = inLegacyLayout(item);
      items.push(legacy);
    }
  }
  return items;
}

async function seed(endpoint: string, table: string, items: Record<string, unknown>[]) {
  const client = createDocumentClient(endpoint);
  await createTables(endpoint, { table, idempotencyTable: `${table}-idempotency` });
  await client.send(new DeleteCommand({ TableName: table, Key: DATA_VERSION_KEY }));
  await inParallel(chunksOf(items, 25), 8, async (chunk) => {
    await Promise.all(chunk.map((item) => client.send(new PutCommand({ TableName: table, Item: item }))));
  });
  return client;
}

export interface MigrationBenchResult {
  items: number;
  migrated: number;
  migration_ms: number;
  items_per_s: number;
  floor_ms: number;
  floor_items_per_s: number;
  over_floor: number;
}

export async function migrationBench(
  endpoint: string,
  id: string,
  options: MigrationBenchOptions,
  progress: (line: string) => void,
): Promise<MigrationBenchResult> {
  const items = legacyTable(options.machines);
  const table = `migration-${id}`;
  progress(`migration: ${items.length} items in 0.1.0's layout`);
  const client = await seed(endpoint, table, items);
  // The deploy is declared done and migration 1 (the site's few items) is behind: the walk is what is measured.
  await client.send(new PutCommand({ TableName: table, Item: { ...DATA_VERSION_KEY, dataVersion: 1, pinned: false, version: 0, updatedAt: AT } }));
  const store = new DynamoFleetStore(client, table, dueTimes);
  const runner = new TableMigrations({ client, table, store, due: dueTimes });
  const settings = { segments: options.segments, writeUnitsPerSecond: 1_000_000, contractAfterMs: 86_400_000 };
  const started = Date.now();
  let dataVersion = 1;
  while (dataVersion < 2) dataVersion = (await runner.run(settings, Date.now() + 60_000, 'bench')).dataVersion;
  const migrationMs = Date.now() - started;
  const migrated = (await store.migrationStatus()).items.find((m) => m.id === 2)?.itemsMigrated ?? 0;
  progress(`migration: ${migrated} of ${items.length} items rewritten in ${migrationMs} ms`);

  const writes = (await Promise.all(items.map((item) => migrateItem(item, { due: dueTimes, membersOf: async () => [] }, false)))).filter(
    (write): write is ItemMigration => write !== null,
  );
  const floorDynamo = await startDynamoDbLocal();
  try {
    const floorTable = `migration-floor-${id}`;
    const floorClient = await seed(floorDynamo.endpoint, floorTable, items);
    const floorStarted = Date.now();
    await inParallel(writes, options.segments, (write) => writeMigration(floorClient, floorTable, write));
    const floorMs = Date.now() - floorStarted;
    floorClient.destroy();
    progress(`migration floor: ${writes.length} writes in ${floorMs} ms`);
    return {
      items: items.length,
      migrated,
      migration_ms: migrationMs,
      items_per_s: round((items.length / migrationMs) * 1000),
      floor_ms: floorMs,
      floor_items_per_s: round((items.length / floorMs) * 1000),
      over_floor: ratio(migrationMs, floorMs),
    };
  } finally {
    client.destroy();
    await floorDynamo.stop();
  }
}
