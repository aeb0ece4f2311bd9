import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient, GetRecordsCommand, GetShardIteratorCommand, type _Record } from '@aws-sdk/client-dynamodb-streams';
import type { BatchWriteCommandInput, BatchWriteCommandOutput, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue as LambdaAttributeValue } from 'aws-lambda';
import { toLambdaRecord } from '#local/lambda-stream-record.ts';
import { auditTargets } from '#domain/events/audit.ts';
import { auditTargetPartition } from '#store/aggregates/audit-items.ts';
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

/**
 * Families with a key per record (a machine's item and history, an instance's, a meta-instance's, an event's delivery,
 * an audit target that names one record) or per rack: a fleet ten times as large has ten times as many of them, each
 * as busy as before. Every other family has a number of keys fixed by design (the due shards, the roster buckets, the
 * summary's counter items, a type's NVLink domain key, the site's items and its one stale check) or by the tenants
 * (orgs, actors, days).
 */
const FAMILIES_THAT_GROW_WITH_THE_FLEET = new Set([
  'table:MACHINE',
  // Machines are in byKind under their rack (`MACHINE#<rack>`): a fleet ten times as large has ten times the racks.
  'byKind:MACHINE',
  // Free machines of the shared pool are in the allocatable index under their type and rack (`ALLOC#<type>#<rack>`).
  'allocatable:ALLOC',
  // The fleet summary's rack aggregates have a key per type and rack (`SUMMARY-RACK#<type>#<rack>`), written when one
  // of that rack's machines changes.
  'table:SUMMARY-RACK',
  'table:INSTANCE',
  // A machine's capacity node (`CAPACITY-NODE#<machine id>`).
  'table:CAPACITY-NODE',
  'table:META',
  'table:EVENT',
  // An audit target naming one record (`AUDIT#machines/<id>`), but for the site-wide ones below.
  'table:AUDIT',
]);

/** Audit targets of the whole site: every registration's, the repair-storm breaker's. */
const SITE_WIDE_AUDIT_KEYS = new Set([auditTargets.registration, auditTargets.repairStorm].map((target) => `table:${auditTargetPartition(target)}`));

const growsWithTheFleet = (key: string): boolean => FAMILIES_THAT_GROW_WITH_THE_FLEET.has(familyOf(key)) && !SITE_WIDE_AUDIT_KEYS.has(key);

export interface HotKey {
  key: string;
  wcu_per_s: number;
  /** The second of its peak. */
  at: string;
}

export interface FamilyHeat {
  family: string;
  key: string;
  wcu_per_s: number;
  modelled_100k_wcu_per_s: number;
}

export interface PartitionHeat {
  unit: string;
  machines: number;
  max_wcu_per_s: number;
  modelled_100k_max_wcu_per_s: number;
  hottest: HotKey[];
  modelled_100k_hottest: HotKey[];
  /** Each family's hottest key, measured and modelled, the hottest modelled first: a family off the top ten still shows. */
  families: FamilyHeat[];
  goal_wcu_per_s: number;
  meets_goal: boolean;
  model: string;
}

/** Each family's hottest reading (of its keys, of the bench's parts), the hottest modelled first. */
export const hottestFamiliesFirst = (readings: readonly FamilyHeat[]): FamilyHeat[] => {
  const hottest = new Map<string, FamilyHeat>();
  for (const reading of readings) {
    if ((hottest.get(reading.family)?.modelled_100k_wcu_per_s ?? -1) < reading.modelled_100k_wcu_per_s) hottest.set(reading.family, reading);
  }
  return [...hottest.values()].sort((a, b) => b.modelled_100k_wcu_per_s - a.modelled_100k_wcu_per_s);
};

/**
 * The hottest keys, measured and modelled at 100,000 machines. The model: the same workload in the same time. A key
 * of a family that grows with the fleet keeps its rate; any other takes the writes of a fleet that much larger on
 * the same keys, so its rate grows with the fleet.
 */
export function heatReport(heat: Heat, machines: number): PartitionHeat {
  const growth = MODELLED_MACHINES / machines;
  const peaks = [...heat].map(([key, seconds]) => {
    const [second, units] = [...seconds].reduce((top, entry) => (entry[1] > top[1] ? entry : top));
    const shared = !growsWithTheFleet(key);
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
  const readings = peaks.map((peak) => ({
    family: familyOf(peak.key),
    key: peak.key,
    wcu_per_s: round(peak.units, 1),
    modelled_100k_wcu_per_s: round(peak.modelled, 1),
  }));
  return {
    unit: 'write capacity units per partition key and second (`table:<pk>` or `<index>:<index pk>`)',
    machines,
    max_wcu_per_s: max,
    modelled_100k_max_wcu_per_s: modelledMax,
    hottest,
    modelled_100k_hottest: modelled,
    families: hottestFamiliesFirst(readings),
    goal_wcu_per_s: HEAT_GOAL_WCU_PER_S,
    meets_goal: max <= HEAT_GOAL_WCU_PER_S && modelledMax <= HEAT_GOAL_WCU_PER_S,
    model:
      'every change in the stream priced by DynamoDB rules (per started KB; each index the old or new image is in, 100 bytes an entry ' +
      'more; keys-only entries only when they come, go or move), by the second it was written. At 100,000 machines, the same workload in ' +
      'the same time: a key per record keeps its rate; every other key (a number of them fixed by design) takes it times 100,000 / machines',
  };
}

/**
 * When each item was written, by its table key, in order: DynamoDB Local stamps stream records to the minute only,
 * so the second of a change is taken from the client that sent it (when the write was answered). A key's stream
 * records come in the order its writes were made, so the n-th record of a key is its n-th write.
 */
export interface WriteTimes {
  /** The time of the key's next write not yet taken. */
  take(pk: string, sk: string): number | undefined;
}

type KeyOf = { pk?: unknown; sk?: unknown } | undefined;
const WRITTEN_BY = {
  PutItemCommand: (input: { Item?: KeyOf }) => [input.Item],
  UpdateItemCommand: (input: { Key?: KeyOf }) => [input.Key],
  DeleteItemCommand: (input: { Key?: KeyOf }) => [input.Key],
  TransactWriteItemsCommand: (input: { TransactItems?: Array<{ Put?: { Item?: KeyOf }; Update?: { Key?: KeyOf }; Delete?: { Key?: KeyOf } }> }) =>
    (input.TransactItems ?? []).map((action) => action.Put?.Item ?? action.Update?.Key ?? action.Delete?.Key),
} as const;

/** A middleware on the clients that write the table (every one must be watched), noting when each item was written. */
export function watchWriteTimes(clients: readonly DynamoDBDocumentClient[]): WriteTimes {
  const times = new Map<string, number[]>();
  const note = (key: KeyOf, at: number) => {
    if (key?.pk === undefined) return;
    const name = `${String(key.pk)}|${String(key.sk)}`;
    (times.get(name) ?? times.set(name, []).get(name)!).push(at);
  };
  for (const client of clients) {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const result = await next(args);
        const command = String(context.commandName);
        const input = args.input as Record<string, unknown>;
        const at = Date.now();
        if (command in WRITTEN_BY) for (const key of WRITTEN_BY[command as keyof typeof WRITTEN_BY](input as never)) note(key, at);
        if (command === 'BatchWriteItemCommand') {
          const unprocessed = new Set(Object.values((result.output as BatchWriteCommandOutput).UnprocessedItems ?? {}).flat());
          const requests = Object.values((input as BatchWriteCommandInput).RequestItems ?? {}).flat();
          for (const request of requests.filter((r) => !unprocessed.has(r))) note(request.PutRequest?.Item ?? request.DeleteRequest?.Key, at);
        }
        return result;
      },
      { step: 'initialize', name: 'fleetward-bench-write-times' },
    );
  }
  return { take: (pk, sk) => times.get(`${pk}|${sk}`)?.shift() };
}

const localConfig = (endpoint: string) => ({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
/** An image as the stream handler reads it: through Lambda's record shape. */
const imageOf = (image: Record<string, LambdaAttributeValue> | undefined): Item | null =>
  image ? unmarshall(image as Parameters<typeof unmarshall>[0]) : null;

/**
 * Every record the table's stream holds from its start (up to `until`), read after the workload, not during it, each
 * at the second its write was answered (`writeTimes`) or, for a write no watched client made, its minute.
 */
export async function streamHeat(
  endpoint: string,
  table: string,
  { until, writeTimes }: { until?: Date; writeTimes?: WriteTimes } = {},
): Promise<{ heat: Heat; records: number; unwatched: number }> {
  const dynamo = new DynamoDBClient(localConfig(endpoint));
  const streams = new DynamoDBStreamsClient(localConfig(endpoint));
  const heat: Heat = new Map();
  let records = 0;
  let unwatched = 0;
  const take = (record: _Record, arn: string) => {
    const change = record.dynamodb;
    const images = toLambdaRecord(record, arn).dynamodb!;
    const keys = images.Keys ? (unmarshall(images.Keys as Parameters<typeof unmarshall>[0]) as { pk: string; sk: string }) : undefined;
    const written = keys && writeTimes?.take(keys.pk, keys.sk);
    if (written === undefined) unwatched += 1;
    const at = written ?? change?.ApproximateCreationDateTime?.getTime();
    if (at === undefined || (until && at > until.getTime())) return;
    const second = Math.floor(at / 1000);
    addWrites(heat, second, partitionWrites(imageOf(images.OldImage), imageOf(images.NewImage)));
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
          for (const record of page.Records ?? []) take(record, arn);
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
  return { heat, records, unwatched };
}
