import type { QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { indexes } from '#store/table.ts';

// How a Query of the `index-lag` switch (index-lag.ts) is answered as the table was: DynamoDB Local's answer, with
// the items written within the lag taken out and their earlier images put back where they match.

export type Item = Record<string, unknown>;

export const keyOf = (item: Item) => JSON.stringify([item.pk, item.sk]);

/** A write still within the lag: the item before it (undefined: absent) and after it. */
export interface RecentWrite {
  at: number;
  table: string;
  key: string;
  before: Item | undefined;
  after: Item | undefined;
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
export function asItWas(query: QueryCommandInput, output: { Items?: Item[]; Count?: number; LastEvaluatedKey?: Item }, recent: RecentWrite[]) {
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
