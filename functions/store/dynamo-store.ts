import { PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SiteHeartbeat } from '#domain/machines/heartbeat.ts';
import { siteKeys } from '#store/aggregates/site-items.ts';
import { DynamoItems } from '#store/dynamo-items.ts';
import { ItemStore } from '#store/item-store.ts';
import { TableLayout } from '#store/layout.ts';
import { LEGACY_SITE_ITEMS } from '#store/legacy-layout.ts';
import { MigrationLedger } from '#store/migrations/ledger.ts';
import type { MigrationStatus } from '#store/migrations/runner.ts';
import type { DueTimes } from '#store/port.ts';

/** The site heartbeat's 0.1.0 key, kept up to date while the table is pinned to that layout (legacy-layout.ts). */
const LEGACY_HEARTBEAT = LEGACY_SITE_ITEMS.find((site) => site.name === 'HEARTBEAT')!.legacy;
const withoutUndefined = (record: object) => Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined));

/** The deployed store: one DynamoDB table (table.ts), every aggregate over DynamoItems. */
export class DynamoFleetStore extends ItemStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly table: string;
  private readonly dynamoItems: DynamoItems;
  private readonly migrations: MigrationLedger;

  constructor(client: DynamoDBDocumentClient, table: string, due: DueTimes) {
    const migrations = new MigrationLedger(client, table);
    const items = new DynamoItems(client, table, migrations);
    super({ items, layout: new TableLayout(items), due });
    this.client = client;
    this.table = table;
    this.dynamoItems = items;
    this.migrations = migrations;
  }

  migrationStatus(): Promise<MigrationStatus> {
    return this.migrations.status();
  }

  async startMigrations(): Promise<MigrationStatus> {
    await this.migrations.unpin();
    return this.migrations.status();
  }

  /** Migration 1's copy of the site's items to their own keys (layout.ts). */
  copyLegacySiteItems(): Promise<number> {
    return this.layout.copyLegacySiteItems();
  }

  /** Store the agent's roster time, guarded so concurrent beats cannot interleave. */
  async putSiteHeartbeat(before: SiteHeartbeat | null, after: Omit<SiteHeartbeat, 'version'>): Promise<SiteHeartbeat> {
    const version = (before?.version ?? 0) + 1;
    await this.dynamoItems.guarded(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.table,
          Key: siteKeys.siteHeartbeat,
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
    if (await this.layout.legacyWrites()) {
      await this.client.send(new PutCommand({ TableName: this.table, Item: { ...LEGACY_HEARTBEAT, ...withoutUndefined(after), version } }));
    }
    return { ...after, version };
  }
}
