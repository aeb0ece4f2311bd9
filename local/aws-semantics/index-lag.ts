import { BatchGetCommand, GetCommand, type DynamoDBDocumentClient, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { indexes } from '#store/table.ts';

/**
 * The `index-lag` switch of FLEETWARD_AWS_SEMANTICS: every GSI read, and every Query not strongly consistent, sees
 * the table as it was `lagMs` ago, as AWS's eventually consistent reads may (DynamoDB Local answers them from the
 * table as it is). Each write through the client keeps the images of the items it wrote, before and after, for as
 * long as the lag; a lagging Query is answered from DynamoDB Local and then corrected with those images: an item
 * written since is shown as it was before (or not at all), evaluated by the key conditions and filters the store
 * uses (store/dynamo-store.ts `queryInput`).
 */
export interface IndexLagOptions {
  lagMs: number;
  /** A client on the same tables that does not lag, to read the images around each write. */
  images: DynamoDBDocumentClient;
  /** The clock the lag is measured by (ms). */
  now?: () => number;
}

type Item = Record<string, unknown>;

/** A write still within the lag: the item before it (undefined: absent) and after it. */
interface RecentWrite {
  at: number;
  table: string;
  key: string;
  before: Item | undefined;
  after: Item | undefined;
}

/** How many Queries were answered as the table was, so a run can show that the switch bit. */
export interface IndexLagStats {
  laggedQueries: number;
}

const keyOf = (item: Item) => JSON.stringify([item.pk, item.sk]);

export function injectIndexLag(client: DynamoDBDocumentClient, { lagMs, images, now = Date.now }: IndexLagOptions): IndexLagStats {
  const stats: IndexLagStats = { laggedQueries: 0 };
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
        stats.laggedQueries++;
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
  return stats;
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

/** A Query's key condition and filter, in the forms the store writes them. */
interface Condition {
  partition: [string, unknown];
  sort?: { name: string; test: (value: string) => boolean };
  filter?: [string, unknown];
}

function conditionOf(query: QueryCommandInput): Condition {
  const names = query.ExpressionAttributeNames ?? {};
  const values = query.ExpressionAttributeValues ?? {};
  const name = (token: string) => names[token] ?? token;
  const value = (token: string) => values[token];
  const expression = query.KeyConditionExpression ?? '';
  // The partition's equality comes first; whatever follows its ` AND ` is the sort key's condition.
  const split = expression.indexOf(' AND ');
  const partition = /^(#?\w+) = (:\w+)$/.exec(split < 0 ? expression : expression.slice(0, split));
  if (!partition) throw new Error(`index-lag: cannot read the key condition ${query.KeyConditionExpression}`);
  const condition: Condition = { partition: [name(partition[1]!), value(partition[2]!)] };
  const sort = split < 0 ? undefined : expression.slice(split + ' AND '.length);
  if (sort !== undefined) {
    const between = /^(#?\w+) BETWEEN (:\w+) AND (:\w+)$/.exec(sort);
    const compare = /^(#?\w+) (<=|>=) (:\w+)$/.exec(sort);
    const prefix = /^begins_with\((#?\w+), (:\w+)\)$/.exec(sort);
    if (between) {
      const [low, high] = [String(value(between[2]!)), String(value(between[3]!))];
      condition.sort = { name: name(between[1]!), test: (v) => v >= low && v <= high };
    } else if (compare) {
      const bound = String(value(compare[3]!));
      condition.sort = { name: name(compare[1]!), test: compare[2] === '<=' ? (v) => v <= bound : (v) => v >= bound };
    } else if (prefix) {
      const start = String(value(prefix[2]!));
      condition.sort = { name: name(prefix[1]!), test: (v) => v.startsWith(start) };
    } else throw new Error(`index-lag: cannot read the sort key condition ${sort}`);
  }
  if (query.FilterExpression !== undefined) {
    const filter = /^(#?\w+) = (:\w+)$/.exec(query.FilterExpression);
    if (!filter) throw new Error(`index-lag: cannot read the filter ${query.FilterExpression}`);
    condition.filter = [name(filter[1]!), value(filter[2]!)];
  }
  return condition;
}

const inKeyRange = (condition: Condition, item: Item | undefined): item is Item =>
  item !== undefined &&
  item[condition.partition[0]] === condition.partition[1] &&
  (!condition.sort || (typeof item[condition.sort.name] === 'string' && condition.sort.test(item[condition.sort.name] as string)));

const passesFilter = (condition: Condition, item: Item) => !condition.filter || item[condition.filter[0]] === condition.filter[1];

/** What the index or table shows of an item: a keys-only index, its keys. */
function projected(query: QueryCommandInput, item: Item): Item {
  const index = Object.values(indexes).find((candidate) => candidate.name === query.IndexName);
  if (index?.projection !== 'KEYS_ONLY') return item;
  return { pk: item.pk, sk: item.sk, [index.pk]: item[index.pk], [index.sk]: item[index.sk] };
}

/**
 * The answer as the table was: items written within the lag are taken out, and their images before the first such
 * write put back where they match, within the page's stretch of the sort key (after its start key, up to its last).
 */
function asItWas(query: QueryCommandInput, output: { Items?: Item[]; Count?: number; LastEvaluatedKey?: Item }, recent: RecentWrite[]) {
  const condition = conditionOf(query);
  const then = new Map<string, RecentWrite>();
  const latest = new Map<string, RecentWrite>();
  for (const write of recent) {
    if (write.table !== query.TableName) continue;
    if (!then.has(write.key)) then.set(write.key, write);
    latest.set(write.key, write);
  }
  const sortName = condition.sort?.name ?? (query.IndexName ? Object.values(indexes).find((i) => i.name === query.IndexName)!.sk : 'sk');
  const ascending = query.ScanIndexForward !== false;
  const order = (a: Item, b: Item) => {
    const tuple = (item: Item) => [String(item[sortName]), String(item.pk), String(item.sk)];
    const [x, y] = [tuple(a), tuple(b)];
    const c = x < y ? -1 : x > y ? 1 : 0;
    return ascending ? c : -c;
  };
  const start = query.ExclusiveStartKey as Item | undefined;
  const last = output.LastEvaluatedKey;
  const onPage = (item: Item) => (!start || order(item, start) > 0) && (!last || order(item, last) <= 0);
  const wasThere = [...then.values()].flatMap((write) => (inKeyRange(condition, write.before) && passesFilter(condition, write.before) ? [write.before] : []));
  if (query.Select === 'COUNT') {
    if (last) return output;
    const nowThere = [...latest.values()].filter((write) => inKeyRange(condition, write.after) && passesFilter(condition, write.after!)).length;
    return { ...output, Count: Math.max(0, (output.Count ?? 0) - nowThere + wasThere.length) };
  }
  const kept = (output.Items ?? []).filter((item) => !then.has(keyOf(item)));
  const restored = wasThere.filter(onPage).map((item) => projected(query, item));
  const items = [...kept, ...restored].sort(order);
  return { ...output, Items: items, Count: items.length };
}
