import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  PutItemCommand,
  UpdateTableCommand,
  waitUntilTableExists,
  type CreateTableCommandInput,
  type GlobalSecondaryIndexDescription,
  type GlobalSecondaryIndexUpdate,
} from '@aws-sdk/client-dynamodb';
import { idempotencyTableDefinition, tableDefinition } from '#store/table.ts';
import type { TableNames } from '#store/client.ts';
import { DATA_VERSION_KEY, LATEST_DATA_VERSION } from '#store/data-version.ts';

/** What bringing the tables up did: created them, or took an existing table through these index steps. */
export interface TablesReady {
  /** The site's table was made now: it is born at the latest data version. */
  created: boolean;
  /** Index changes applied to an existing table, one UpdateTable each, in order. */
  steps: string[];
}

export class TableUpgradeError extends Error {}

const sameIndex = (live: GlobalSecondaryIndexDescription, wanted: NonNullable<CreateTableCommandInput['GlobalSecondaryIndexes']>[number]) =>
  JSON.stringify(live.KeySchema) === JSON.stringify(wanted.KeySchema) &&
  (live.Projection?.ProjectionType ?? 'ALL') === (wanted.Projection?.ProjectionType ?? 'ALL');

/**
 * The index changes that take a live table to `definition`, as CloudFormation would make them: one index created or
 * deleted per update. New indexes first (the code that reads them arrives with them), then changed ones (deleted and
 * made again), then the ones no longer defined.
 */
export function indexSteps(live: GlobalSecondaryIndexDescription[], definition: CreateTableCommandInput): GlobalSecondaryIndexUpdate[] {
  const wanted = definition.GlobalSecondaryIndexes ?? [];
  const liveByName = new Map(live.map((index) => [index.IndexName!, index]));
  const create = (index: (typeof wanted)[number]): GlobalSecondaryIndexUpdate => ({
    Create: { IndexName: index.IndexName!, KeySchema: index.KeySchema!, Projection: index.Projection! },
  });
  const added = wanted.filter((index) => !liveByName.has(index.IndexName!)).map(create);
  const changed = wanted
    .filter((index) => liveByName.has(index.IndexName!) && !sameIndex(liveByName.get(index.IndexName!)!, index))
    .flatMap((index) => [{ Delete: { IndexName: index.IndexName! } }, create(index)]);
  const removed = live.filter((index) => !wanted.some((w) => w.IndexName === index.IndexName)).map((index) => ({ Delete: { IndexName: index.IndexName! } }));
  return [...added, ...changed, ...removed];
}

const describeStep = (step: GlobalSecondaryIndexUpdate) => (step.Create ? `create index ${step.Create.IndexName}` : `delete index ${step.Delete!.IndexName}`);

async function upgradeTable(client: DynamoDBClient, definition: CreateTableCommandInput, log: (line: string) => void): Promise<string[]> {
  const name = definition.TableName!;
  const live = (await client.send(new DescribeTableCommand({ TableName: name }))).Table!;
  if (JSON.stringify(live.KeySchema) !== JSON.stringify(definition.KeySchema)) {
    throw new TableUpgradeError(`table ${name}: its key schema ${JSON.stringify(live.KeySchema)} is not this release's; no release changes it in place`);
  }
  if (definition.StreamSpecification && !live.StreamSpecification?.StreamEnabled) {
    // A start that stopped between making the table and turning its stream on (createMarked).
    await client.send(new UpdateTableCommand({ TableName: name, StreamSpecification: definition.StreamSpecification }));
    await untilIndexesSettle(client, name);
  }
  const steps = indexSteps(live.GlobalSecondaryIndexes ?? [], definition);
  for (const [at, step] of steps.entries()) {
    log(`table ${name} was made by an earlier release: step ${at + 1} of ${steps.length}, ${describeStep(step)}`);
    await client.send(
      new UpdateTableCommand({
        TableName: name,
        ...(step.Create ? { AttributeDefinitions: definition.AttributeDefinitions } : {}),
        GlobalSecondaryIndexUpdates: [step],
      }),
    );
    await untilIndexesSettle(client, name);
  }
  return steps.map(describeStep);
}

/** An index being created is not yet readable, nor one being deleted gone: the next step, and the site, wait for both. */
async function untilIndexesSettle(client: DynamoDBClient, name: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const table = (await client.send(new DescribeTableCommand({ TableName: name }))).Table!;
    const settled = table.TableStatus === 'ACTIVE' && (table.GlobalSecondaryIndexes ?? []).every((index) => index.IndexStatus === 'ACTIVE');
    if (settled) return;
    if (Date.now() > deadline) throw new TableUpgradeError(`table ${name}: its indexes did not settle within 60 s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * The site's table, born at the latest data version: the item that says so is written before the stream is turned
 * on, so that no reader of the stream ever sees it (the stream poller's tests count every record).
 */
async function createMarked(client: DynamoDBClient, definition: CreateTableCommandInput): Promise<void> {
  const { StreamSpecification, ...withoutStream } = definition;
  const name = definition.TableName!;
  await client.send(new CreateTableCommand(withoutStream));
  await waitUntilTableExists({ client, maxWaitTime: 30 }, { TableName: name });
  const { pk, sk } = DATA_VERSION_KEY;
  await client.send(
    new PutItemCommand({
      TableName: name,
      Item: {
        pk: { S: pk },
        sk: { S: sk },
        dataVersion: { N: String(LATEST_DATA_VERSION) },
        updatedAt: { S: new Date().toISOString() },
        version: { N: '0' },
        pinned: { BOOL: false },
      },
    }),
  );
  await client.send(new UpdateTableCommand({ TableName: name, StreamSpecification }));
  await untilIndexesSettle(client, name);
}

/**
 * Creates the site's tables on DynamoDB Local, or brings tables an earlier release made (a persisted folder) to this
 * release's shape one index change at a time, as a stack update would, saying so for each step. A table created
 * here holds nothing in an older layout, so it is marked with the latest data version: no migration walks it.
 */
export async function createTables(endpoint: string, names: TableNames, log: (line: string) => void = () => {}): Promise<TablesReady> {
  const client = new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  const ready: TablesReady = { created: false, steps: [] };
  try {
    for (const [at, definition] of [tableDefinition(names.table), idempotencyTableDefinition(names.idempotencyTable)].entries()) {
      try {
        if (at === 0) {
          await createMarked(client, definition);
          ready.created = true;
        } else {
          await client.send(new CreateTableCommand(definition));
          await waitUntilTableExists({ client, maxWaitTime: 30 }, { TableName: definition.TableName! });
        }
      } catch (error) {
        if ((error as Error).name !== 'ResourceInUseException') throw error;
        await waitUntilTableExists({ client, maxWaitTime: 30 }, { TableName: definition.TableName! });
        ready.steps.push(...(await upgradeTable(client, definition, log)));
      }
    }
    return ready;
  } finally {
    client.destroy();
  }
}
