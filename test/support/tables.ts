import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import { createTables } from '#local/tables.ts';
import { createDocumentClient, type TableNames } from '#store/client.ts';

/** Fresh tables on the run's DynamoDB Local, named uniquely so test files never see each other's data. */
export async function freshTables(prefix = 'test') {
  const endpoint = inject('dynamoEndpoint');
  const id = randomUUID().slice(0, 8);
  const names: TableNames = { table: `${prefix}-${id}`, idempotencyTable: `${prefix}-${id}-idempotency` };
  await createTables(endpoint, names);
  return { endpoint, names, client: createDocumentClient(endpoint) };
}
