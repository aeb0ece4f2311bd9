import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient, GetRecordsCommand, GetShardIteratorCommand, type _Record } from '@aws-sdk/client-dynamodb-streams';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { indexes } from '#store/table.ts';
import { round } from './stats.ts';
import { itemBytes } from './write-units.ts';

// Partition heat: the write units each partition key of the table and of each index took in each second, priced by
// DynamoDB's rules from every item change the table's stream holds (its old and new images, and the second it was
// written). AWS allows a partition key 1,000 write units a second; the goal keeps half of it in reserve.

type Item = Record<string, unknown>;

/** The goal per partition key and second, at the measured size and at the modelled one. */
export const HEAT_GOAL_WCU_PER_S = 500;
/** The fleet size the measured heat is modelled at. */
export const MODELLED_MACHINES = 100_000;
/** What DynamoDB adds to an index entry's size. */
const INDEX_ENTRY_OVERHEAD_BYTES = 100;
const HOTTEST = 10;

const unitsOf = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024));

/** A partition key, named by where it is: `table:<pk>` or `<index>:<index pk>`. */
export interface KeyWrite {
  key: string;
  units: number;
}

/**
 * What one item change costs each partition key: the table the larger of its old and new size; an index an entry
 * written (a new one, or one of an ALL projection whose item changed), an entry deleted (the item left the index),
 * or both (its index key moved). A keys-only entry whose keys stay is not written.
 */
export function partitionWrites(before: Item | null, after: Item | null): KeyWrite[] {
  const either = after ?? before;
  if (!either) return [];
  const size = (item: Item | null) => (item ? itemBytes(item) : 0);
  const writes: KeyWrite[] = [{ key: `table:${String(either.pk)}`, units: unitsOf(Math.max(size(before), size(after))) }];
  for (const index of Object.values(indexes)) {
    const entryOf = (item: Item | null) => (item && item[index.pk] !== undefined && item[index.sk] !== undefined ? item : null);
    const entryUnits = (item: Item) => {
      const projected = index.projection === 'ALL' ? item : { pk: item.pk, sk: item.sk, [index.pk]: item[index.pk], [index.sk]: item[index.sk] };
      return unitsOf(INDEX_ENTRY_OVERHEAD_BYTES + itemBytes(projected));
    };
    const key = (item: Item) => `${index.name}:${String(item[index.pk])}`;
    const [old, now] = [entryOf(before), entryOf(after)];
    if (old && now && old[index.pk] === now[index.pk] && old[index.sk] === now[index.sk]) {
      if (index.projection === 'ALL') writes.push({ key: key(now), units: entryUnits(now) });
      continue;
    }
    if (old) writes.push({ key: key(old), units: entryUnits(old) });
    if (now) writes.push({ key: key(now), units: entryUnits(now) });
  }
  return writes;
}

/** Write units by partition key and by second (epoch seconds). */
export type Heat = Map<string, Map<number, number>>;

export function addWrites(heat: Heat, second: number, writes: readonly KeyWrite[]): void {
  for (const { key, units } of writes) {
    const seconds = heat.get(key) ?? heat.set(key, new Map()).get(key)!;
    seconds.set(second, (seconds.get(second) ?? 0) + units);
  }
}

/** A partition key's family: the key up to its first `#` (`table:MACHINE`, `due:DUE`, `byKind:MACHINE`). */
const familyOf = (key: string): string => key.split('#')[0]!;

export interface HotKey {
  key: string;
  wcu_per_s: number;
  /** The second of its peak. */
  at: string;
}

export interface PartitionHeat {
  unit: string;
  machines: number;
  max_wcu_per_s: number;
  modelled_100k_max_wcu_per_s: number;
  hottest: HotKey[];
  modelled_100k_hottest: HotKey[];
  goal_wcu_per_s: number;
  meets_goal: boolean;
  model: string;
}

/**
 * The hottest keys, measured and modelled at 100,000 machines. The model: the same workload in the same time. A
 * family of keys with at least one key per 100 machines (a machine's, an instance's, a rack's) keeps each key's
 * rate; a family with fewer (the due shards, the summary, an index's per-type key) has the same keys take every
 * write of a fleet ten times as large, so its rate grows with the fleet.
 */
export function heatReport(heat: Heat, machines: number): PartitionHeat {
  const keysPerFamily = new Map<string, number>();
  for (const key of heat.keys()) keysPerFamily.set(familyOf(key), (keysPerFamily.get(familyOf(key)) ?? 0) + 1);
  const growth = MODELLED_MACHINES / machines;
  const peaks = [...heat].map(([key, seconds]) => {
    const [second, units] = [...seconds].reduce((top, entry) => (entry[1] > top[1] ? entry : top));
    const shared = keysPerFamily.get(familyOf(key))! < machines / 100;
    return { key, units, modelled: shared ? units * growth : units, at: new Date(second * 1000).toISOString() };
  });
  const top = (by: (peak: (typeof peaks)[number]) => number): HotKey[] =>
    [...peaks]
      .sort((a, b) => by(b) - by(a))
      .slice(0, HOTTEST)
      .map((peak) => ({ key: peak.key, wcu_per_s: round(by(peak), 1), at: peak.at }));
  const hottest = top((peak) => peak.units);
  const modelled = top((peak) => peak.modelled);
  const max = hottest[0]?.wcu_per_s ?? 0;
  const modelledMax = modelled[0]?.wcu_per_s ?? 0;
  return {
    unit: 'write capacity units per partition key and second (`table:<pk>` or `<index>:<index pk>`)',
    machines,
    max_wcu_per_s: max,
    modelled_100k_max_wcu_per_s: modelledMax,
    hottest,
    modelled_100k_hottest: modelled,
    goal_wcu_per_s: HEAT_GOAL_WCU_PER_S,
    meets_goal: max <= HEAT_GOAL_WCU_PER_S && modelledMax <= HEAT_GOAL_WCU_PER_S,
    model:
      'every change in the stream priced by DynamoDB rules (per started KB; each index the old or new image is in, 100 bytes an entry ' +
      'more; keys-only entries only when they come, go or move), by the second it was written. At 100,000 machines: a key of a family ' +
      'with fewer keys than one per 100 machines takes its rate times 100,000 / machines; the others keep theirs',
  };
}

const localConfig = (endpoint: string) => ({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
const imageOf = (image: Parameters<typeof unmarshall>[0] | undefined): Item | null => (image ? unmarshall(image) : null);

/** Every record the table's stream holds from its start (up to `until`), read after the workload, not during it. */
export async function streamHeat(endpoint: string, table: string, { until }: { until?: Date } = {}): Promise<{ heat: Heat; records: number }> {
  const dynamo = new DynamoDBClient(localConfig(endpoint));
  const streams = new DynamoDBStreamsClient(localConfig(endpoint));
  const heat: Heat = new Map();
  let records = 0;
  const take = (record: _Record) => {
    const change = record.dynamodb;
    if (!change?.ApproximateCreationDateTime || (until && change.ApproximateCreationDateTime > until)) return;
    const second = Math.floor(change.ApproximateCreationDateTime.getTime() / 1000);
    addWrites(heat, second, partitionWrites(imageOf(change.OldImage), imageOf(change.NewImage)));
    records += 1;
  };
  try {
    const arn = (await dynamo.send(new DescribeTableCommand({ TableName: table }))).Table?.LatestStreamArn;
    if (!arn) throw new Error(`partition heat: table ${table} has no stream`);
    let startShard: string | undefined;
    do {
      const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: arn, ExclusiveStartShardId: startShard }));
      for (const shard of StreamDescription?.Shards ?? []) {
        let iterator = (await streams.send(new GetShardIteratorCommand({ StreamArn: arn, ShardId: shard.ShardId, ShardIteratorType: 'TRIM_HORIZON' })))
          .ShardIterator;
        while (iterator) {
          const page = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
          for (const record of page.Records ?? []) take(record);
          // An open shard read to its end answers nothing more.
          iterator = (page.Records ?? []).length > 0 ? page.NextShardIterator : undefined;
        }
      }
      startShard = StreamDescription?.LastEvaluatedShardId;
    } while (startShard);
  } finally {
    dynamo.destroy();
    streams.destroy();
  }
  return { heat, records };
}
