import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { DATA_VERSION_KEY, LATEST_DATA_VERSION, migrationKeys, type DataVersion } from '#store/data-version.ts';
import type { TableKey } from '#store/item-access.ts';
import { MigrationLedger } from './ledger.ts';
import type { SegmentCheckpoint } from './progress.ts';

const withoutNullStart = ({ startKey, ...rest }: SegmentCheckpoint): Omit<SegmentCheckpoint, 'startKey'> & { startKey?: Record<string, unknown> } =>
  startKey ? { ...rest, startKey } : rest;

/** The ledger as the runner writes it while it walks: the data version advanced, progress and checkpoints saved. */
export class MigrationJournal extends MigrationLedger {
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
}
