import { logicalResource, type LogicalTable } from '#lib/logical-resources.ts';

/** One authorization IAM makes for a request: an action on a resource, with the condition keys it sees. */
export interface IamCall {
  action: string;
  /** A logical resource (lib/logical-resources.ts), or `unknown:…` for one outside the site's own. */
  resource: string;
  /** Condition keys of the request; multivalued keys (ArrayOfString in the reference) as arrays. */
  context?: Record<string, string | string[]>;
}

/** The physical names of the site's resources in this process, so that calls can be named logically. */
export interface LocalResourceNames {
  tables: Record<string, LogicalTable>;
  eventBusName: string;
}

export type AwsService = 'dynamodb' | 'dynamodb-streams' | 'eventbridge';

// biome-ignore lint/suspicious/noExplicitAny: one walker over every SDK command's input, read by the fields each operation has
type Input = Record<string, any>;

const transactWriteActions: Record<string, string> = { Put: 'PutItem', Update: 'UpdateItem', Delete: 'DeleteItem', ConditionCheck: 'ConditionCheckItem' };

/**
 * The IAM authorizations one SDK command needs, expanded the way IAM evaluates them (see the Service Authorization
 * Reference for DynamoDB and EventBridge): a transaction is authorized item by item as the underlying PutItem,
 * UpdateItem, DeleteItem, ConditionCheckItem or GetItem on that item's table (there is no Transact* IAM action); a
 * batch as its own action on each table it names; a Query or Scan with IndexName on the index's ARN; ListStreams
 * only on `*`; PutEvents once per bus its entries name, with their sources and detail types as condition keys.
 */
export function iamCallsOf(service: AwsService, operation: string, input: Input, names: LocalResourceNames): IamCall[] {
  if (service === 'eventbridge') return eventBridgeCalls(operation, input, names);
  const dynamodb = (action: string) => `dynamodb:${action}`;
  if (service === 'dynamodb-streams') {
    return [{ action: dynamodb(operation), resource: operation === 'ListStreams' ? logicalResource.any : streamOf(input.StreamArn, names) }];
  }
  const table = (name: string | undefined) => tableOf(name, names);
  switch (operation) {
    case 'TransactWriteItems':
      return (input.TransactItems ?? []).flatMap((item: Input) =>
        Object.entries(item).map(([kind, part]: [string, Input]) => ({
          action: dynamodb(transactWriteActions[kind] ?? `unknown:${kind}`),
          resource: table(part.TableName),
        })),
      );
    case 'TransactGetItems':
      return (input.TransactItems ?? []).map((item: Input) => ({ action: dynamodb('GetItem'), resource: table(item.Get?.TableName) }));
    case 'BatchGetItem':
    case 'BatchWriteItem':
      return Object.keys(input.RequestItems ?? {}).map((name) => ({ action: dynamodb(operation), resource: table(name) }));
    default: {
      const onIndex = (operation === 'Query' || operation === 'Scan') && input.IndexName;
      const resource = onIndex ? indexOf(input.TableName, input.IndexName, names) : table(input.TableName);
      return [{ action: dynamodb(operation), resource }];
    }
  }
}

/** PutEvents is authorized once per bus it names; `events:source` and `events:detail-type` are multivalued keys. */
function eventBridgeCalls(operation: string, input: Input, names: LocalResourceNames): IamCall[] {
  if (operation !== 'PutEvents') return [{ action: `events:${operation}`, resource: busOf(input.EventBusName ?? input.Name, names) }];
  const byBus = new Map<string, Input[]>();
  for (const entry of input.Entries ?? []) {
    const bus = busOf(entry.EventBusName, names);
    byBus.set(bus, [...(byBus.get(bus) ?? []), entry]);
  }
  const distinct = (values: unknown[]) => [...new Set(values.map(String))].sort();
  return [...byBus].map(([resource, entries]) => ({
    action: 'events:PutEvents',
    resource,
    context: { 'events:source': distinct(entries.map((e) => e.Source)), 'events:detail-type': distinct(entries.map((e) => e.DetailType)) },
  }));
}

function tableOf(name: string | undefined, names: LocalResourceNames): string {
  const table = name === undefined ? undefined : names.tables[name];
  return table ? logicalResource.table(table) : `unknown:table/${name}`;
}

function indexOf(tableName: string | undefined, indexName: string, names: LocalResourceNames): string {
  return tableName !== undefined && names.tables[tableName] === 'main' ? logicalResource.index(indexName) : `unknown:table/${tableName}/index/${indexName}`;
}

/** A stream ARN names its table (`…:table/<name>/stream/<label>`); GetRecords names only a shard iterator. */
function streamOf(streamArn: string | undefined, names: LocalResourceNames): string {
  if (streamArn === undefined) return logicalResource.stream;
  const tableName = /:table\/([^/]+)\/stream\//.exec(streamArn)?.[1];
  return tableName !== undefined && names.tables[tableName] === 'main' ? logicalResource.stream : `unknown:${streamArn}`;
}

/** EventBridge takes a bus's name or ARN; without one, the account's default bus. */
function busOf(nameOrArn: string | undefined, names: LocalResourceNames): string {
  const name = nameOrArn?.replace(/^arn:[^:]+:events:[^:]*:[^:]*:event-bus\//, '') ?? 'default';
  return name === names.eventBusName ? logicalResource.eventBus : `unknown:event-bus/${name}`;
}
