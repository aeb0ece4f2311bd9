import { BatchGetCommand, GetCommand, type DynamoDBDocumentClient, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { asItWas, keyOf, type Item, type RecentWrite } from '#local/aws-semantics/lagged-query.ts';

/**
 * The `index-lag` switch of FLEETWARD_AWS_SEMANTICS: every GSI read, and every Query not strongly consistent, sees
 * the table as it was `lagMs` ago, as AWS's eventually consistent reads may (DynamoDB Local answers them from the
 * table as it is). Each write through the client keeps the images of the items it wrote, before and after, for as
 * long as the lag; a lagging Query is answered from DynamoDB Local and then corrected with those images: an item
 * written since is shown as it was before (or not at all), evaluated by the key conditions and filters the store
 * uses (store/dynamo-items.ts `queryInput`).
 */
export interface IndexLagOptions {
  lagMs: number;
  /** A client on the same tables that does not lag, to read the images around each write. */
  images: DynamoDBDocumentClient;
  /** The clock the lag is measured by (ms). */
  now?: () => number;
}

export function injectIndexLag(client: DynamoDBDocumentClient, { lagMs, images, now = Date.now }: IndexLagOptions): void {
  let recent: RecentWrite[] = [];
  const settle = () => {
    const settled = now() - lagMs;
    if (recent.length > 0 && recent[0]!.at <= settled) recent = recent.filter((write) => write.at > settled);
  };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      // The document client's input and output, under the low-level command's name (PutItemCommand for PutCommand).
      const command = String(context.commandName).replace(/(Item|Items)?Command$/, '');
      const input = args.input as Record<string, unknown>;
      if (command === 'Query') {
        settle();
        const query = input as QueryCommandInput;
        const result = await next(args);
        if (!lags(query) || !recent.some((write) => write.table === query.TableName)) return result;
        const output = result.output as { Items?: Item[]; Count?: number; LastEvaluatedKey?: Item };
        return { ...result, output: asItWas(query, output, recent) } as typeof result;
      }
      const written = writtenKeys(command, input);
      if (written.length === 0) return next(args);
      const before = await readImages(images, written);
      const result = await next(args);
      const unprocessed = new Set(unprocessedKeys(result.output as Record<string, unknown>));
      const settledAt = now();
      for (const write of written) {
        if (unprocessed.has(`${write.table}|${keyOf(write.key)}`)) continue;
        const after = 'after' in write ? write.after : await readImage(images, write.table, write.key);
        recent.push({ at: settledAt, table: write.table, key: keyOf(write.key), before: before.get(`${write.table}|${keyOf(write.key)}`), after });
      }
      settle();
      return result;
    },
    { step: 'initialize', name: 'awsSemanticsIndexLag', priority: 'high' },
  );
}

/** GSIs are never strongly consistent; the table is, when asked. */
const lags = (query: QueryCommandInput) => query.IndexName !== undefined || !query.ConsistentRead;

interface Written {
  table: string;
  key: Item;
  /** The item as written, when the write says it whole (a Put); otherwise it is read back. */
  after?: Item | undefined;
}

/** The items a write command (named without `Item`/`Command`) writes, by table. */
function writtenKeys(command: string, input: Record<string, unknown>): Written[] {
  const put = (table: unknown, item: Item): Written => ({ table: String(table), key: { pk: item.pk, sk: item.sk }, after: item });
  const other = (table: unknown, key: Item): Written => ({ table: String(table), key: { pk: key.pk, sk: key.sk } });
  if (command === 'Put') return [put(input.TableName, input.Item as Item)];
  if (command === 'Update' || command === 'Delete') {
    const written = other(input.TableName, input.Key as Item);
    return [command === 'Delete' ? { ...written, after: undefined } : written];
  }
  if (command === 'TransactWrite') {
    return (input.TransactItems as Array<Record<string, Record<string, unknown>>>).flatMap((entry) => {
      if (entry.Put) return [put(entry.Put.TableName, entry.Put.Item as Item)];
      if (entry.Update) return [other(entry.Update.TableName, entry.Update.Key as Item)];
      if (entry.Delete) return [{ ...other(entry.Delete.TableName, entry.Delete.Key as Item), after: undefined }];
      return [];
    });
  }
  if (command === 'BatchWrite') {
    return Object.entries(input.RequestItems as Record<string, Array<Record<string, Record<string, Item>>>>).flatMap(([table, requests]) =>
      requests.map((request) =>
        request.PutRequest ? put(table, request.PutRequest.Item!) : { ...other(table, request.DeleteRequest!.Key!), after: undefined },
      ),
    );
  }
  return [];
}

function unprocessedKeys(output: Record<string, unknown> | undefined): string[] {
  const unprocessed = (output?.UnprocessedItems ?? {}) as Record<string, Array<Record<string, Record<string, Item>>>>;
  return Object.entries(unprocessed).flatMap(([table, requests]) =>
    requests.map((request) => `${table}|${keyOf(request.PutRequest?.Item ?? request.DeleteRequest?.Key ?? {})}`),
  );
}

async function readImages(images: DynamoDBDocumentClient, written: Written[]): Promise<Map<string, Item>> {
  const found = new Map<string, Item>();
  for (const table of new Set(written.map((write) => write.table))) {
    const keys = [...new Map(written.filter((write) => write.table === table).map((write) => [keyOf(write.key), write.key])).values()];
    for (let i = 0; i < keys.length; i += 100) {
      let pending: Item[] = keys.slice(i, i + 100);
      while (pending.length > 0) {
        const result = await images.send(new BatchGetCommand({ RequestItems: { [table]: { Keys: pending, ConsistentRead: true } } }));
        for (const item of result.Responses?.[table] ?? []) found.set(`${table}|${keyOf(item)}`, item);
        pending = result.UnprocessedKeys?.[table]?.Keys ?? [];
      }
    }
  }
  return found;
}

async function readImage(images: DynamoDBDocumentClient, table: string, key: Item): Promise<Item | undefined> {
  return (await images.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true }))).Item;
}
