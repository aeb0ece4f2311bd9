import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export interface TableNames {
  table: string;
  idempotencyTable: string;
}

/** A document client; `endpoint` points at DynamoDB Local, otherwise the SDK's own resolution applies. */
export function createDocumentClient(endpoint?: string): DynamoDBDocumentClient {
  const client = new DynamoDBClient(
    endpoint
      ? { endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
      : {},
  );
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
}

export function tableNamesFromEnv(env: NodeJS.ProcessEnv = process.env): TableNames {
  const table = env.TABLE_NAME;
  const idempotencyTable = env.IDEMPOTENCY_TABLE_NAME;
  if (!table || !idempotencyTable) throw new Error('TABLE_NAME and IDEMPOTENCY_TABLE_NAME must be set');
  return { table, idempotencyTable };
}
