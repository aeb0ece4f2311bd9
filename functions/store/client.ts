import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export interface TableNames {
  table: string;
  idempotencyTable: string;
}

/**
 * The SDK's default logger drops everything, yet its logger middleware builds a redacted copy of every request and
 * answer for it (`logger?.info?.(…)`, and `logger?.error?.(…)` on a failure): 3.6 s of CPU over the 20,000 writes of
 * the heartbeat bench. Without those two methods it builds none. The SDK calls the other three unguarded.
 */
const quietSdkLogger = { debug() {}, warn() {}, trace() {} } as unknown as NonNullable<DynamoDBClientConfig['logger']>;

/** A document client; `endpoint` points at DynamoDB Local, otherwise the SDK's own resolution applies. */
export function createDocumentClient(endpoint?: string): DynamoDBDocumentClient {
  const client = new DynamoDBClient(
    endpoint
      ? { endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, logger: quietSdkLogger }
      : { logger: quietSdkLogger },
  );
  const documents = DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
  documents.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        // The SDK stamps `$metadata` on every error from the first attempt to send onwards; one without it was
        // raised while the command's values were marshalled and serialized, so those values are the cause.
        if (error instanceof Error && !('$metadata' in error)) throw new UnmarshallableInputError(error.message, { cause: error });
        throw error;
      }
    },
    { step: 'initialize', name: 'unmarshallableInput' },
  );
  return documents;
}

/** The document client could not turn a command's values into DynamoDB's (e.g. a number beyond 2^53). */
export class UnmarshallableInputError extends Error {
  override name = 'UnmarshallableInputError';
}

export function tableNamesFromEnv(env: NodeJS.ProcessEnv = process.env): TableNames {
  const table = env.TABLE_NAME;
  const idempotencyTable = env.IDEMPOTENCY_TABLE_NAME;
  if (!table || !idempotencyTable) throw new Error('TABLE_NAME and IDEMPOTENCY_TABLE_NAME must be set');
  return { table, idempotencyTable };
}
