import { CreateTableCommand, DynamoDBClient, waitUntilTableExists } from '@aws-sdk/client-dynamodb';
import { idempotencyTableDefinition, tableDefinition } from '#store/table.ts';
import type { TableNames } from '#store/client.ts';

/** Creates the site's tables on DynamoDB Local (no-op for tables that already exist, e.g. a persisted folder). */
export async function createTables(endpoint: string, names: TableNames): Promise<void> {
  const client = new DynamoDBClient({
    endpoint,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  for (const definition of [tableDefinition(names.table), idempotencyTableDefinition(names.idempotencyTable)]) {
    try {
      await client.send(new CreateTableCommand(definition));
    } catch (error) {
      if ((error as Error).name !== 'ResourceInUseException') throw error;
    }
    await waitUntilTableExists({ client, maxWaitTime: 30 }, { TableName: definition.TableName! });
  }
  client.destroy();
}
