import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type GetRecordsCommandOutput,
  type Shard,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord } from 'aws-lambda';
import type { Lane } from './lambda-delivery.ts';
import { toLambdaRecord } from './lambda-stream-record.ts';

/**
 * Reading a table's stream on DynamoDB Local: which shards exist and how they descend from each other, an iterator
 * per shard, kept or regained after it is lost or its records trimmed, and the next records of a shard. What is done
 * with the records is the poller's (stream-poller.ts).
 */

export type StartPosition = 'TRIM_HORIZON' | 'LATEST';

export interface ShardState {
  id: string;
  parentId?: string;
  initial: StartPosition;
  iterator?: string;
  /** GetRecords returned no next iterator: the shard is closed and fully read. */
  ended: boolean;
  /** Last sequence number read, to resume after an iterator is lost. */
  lastFetched?: string;
  /**
   * The records read and not yet delivered or set aside, the poller's: one lane, or one per partition-key hash when
   * the poller runs several at once (Lambda's ParallelizationFactor), each in stream order.
   */
  lanes: Lane[];
  /** Epoch ms before which the shard is not read again (after a failed read). */
  readNotBefore: number;
}

/** Records read from the shard that are still waiting in its lanes. */
export const pendingIn = (shard: ShardState): number => shard.lanes.reduce((sum, lane) => sum + lane.pending.length, 0);

export interface StreamShardsOptions {
  endpoint: string;
  tableName: string;
  /** Where to begin in the shards that exist at open(); shards that appear later are read whole. */
  startAt: StartPosition;
  /** Records per GetRecords. */
  batchSize: number;
  /** How often to look for new shards while nothing closes. */
  shardRefreshMs: number;
  /** Region to report in records; DynamoDB Local reports `ddblocal`. */
  awsRegion?: string;
  /** The lanes a newly listed shard starts with. */
  emptyLanes: () => Lane[];
  /** Called with each DynamoDB Streams client made, before its first call (the AWS call recorder). */
  onStreamsClient?: (client: DynamoDBStreamsClient) => void;
  log: (line: string) => void;
  now: () => number;
}

export interface StreamShards {
  /** Every shard known, by id, parents listed before their children. */
  all(): ShardState[];
  get(id: string): ShardState | undefined;
  /** Lists the shards and takes an iterator for each: with `LATEST`, "latest" means the moment open() resolved. */
  open(): Promise<void>;
  /** Lists the shards again when it is time to, or at once after a shard closed. */
  refreshIfDue(): Promise<void>;
  /** The next records of `shard`, in Lambda's shape; marks it ended when the stream closed it. */
  read(shard: ShardState): Promise<DynamoDBRecord[]>;
  /** Cancels the calls in flight: each fails at once. */
  abortCalls(): void;
  /** Lets go of the clients. */
  close(): void;
}

export function createStreamShards(options: StreamShardsOptions): StreamShards {
  const { log, now } = options;
  const clientConfig = { endpoint: options.endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };
  let shards = new Map<string, ShardState>();
  let streamArn: string | undefined;
  let nextRefreshAt = 0;
  let dynamo: DynamoDBClient | undefined;
  let streams: DynamoDBStreamsClient | undefined;
  let abort = new AbortController();

  async function describeStreamArn(): Promise<string> {
    const { Table } = await dynamo!.send(new DescribeTableCommand({ TableName: options.tableName }), { abortSignal: abort.signal });
    if (!Table?.LatestStreamArn || !Table.StreamSpecification?.StreamEnabled) {
      throw new Error(`table ${options.tableName} has no stream enabled`);
    }
    return Table.LatestStreamArn;
  }

  async function listShards(arn: string): Promise<Shard[]> {
    const all: Shard[] = [];
    let exclusiveStartShardId: string | undefined;
    do {
      const { StreamDescription } = await streams!.send(new DescribeStreamCommand({ StreamArn: arn, ExclusiveStartShardId: exclusiveStartShardId }), {
        abortSignal: abort.signal,
      });
      all.push(...(StreamDescription?.Shards ?? []));
      exclusiveStartShardId = StreamDescription?.LastEvaluatedShardId;
    } while (exclusiveStartShardId);
    return all;
  }

  async function refresh(initial: boolean): Promise<void> {
    const arn = await describeStreamArn();
    if (streamArn && arn !== streamArn) {
      // The stream was disabled and enabled again: a new stream whose records all postdate our start.
      log(`stream-poller: ${options.tableName} has a new stream ${arn}, following it`);
      shards = new Map();
    }
    streamArn = arn;
    const listed = await listShards(arn);
    const listedIds = new Set<string>();
    for (const shard of listed) {
      const id = shard.ShardId;
      if (!id) continue;
      listedIds.add(id);
      if (shards.has(id)) continue;
      const initialPosition: StartPosition = initial ? options.startAt : 'TRIM_HORIZON';
      const closed = shard.SequenceNumberRange?.EndingSequenceNumber !== undefined;
      shards.set(id, {
        id,
        parentId: shard.ParentShardId,
        initial: initialPosition,
        // LATEST on a closed shard can never yield anything.
        ended: closed && initialPosition === 'LATEST',
        lanes: options.emptyLanes(),
        readNotBefore: 0,
      });
    }
    for (const [id, shard] of shards) {
      // Trimmed away by the stream's retention; forget it once we are done with it.
      if (!listedIds.has(id) && shard.ended && pendingIn(shard) === 0) shards.delete(id);
    }
    nextRefreshAt = now() + options.shardRefreshMs;
  }

  async function acquireIterator(shard: ShardState): Promise<string | undefined> {
    const resume = shard.lastFetched;
    const input = resume ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER' as const, SequenceNumber: resume } : { ShardIteratorType: shard.initial };
    try {
      const out = await streams!.send(new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: shard.id, ...input }), { abortSignal: abort.signal });
      return out.ShardIterator;
    } catch (error) {
      if ((error as Error).name !== 'TrimmedDataAccessException' || !resume) throw error;
      log(`stream-poller: records after ${resume} in ${shard.id} were trimmed before we read them; resuming at TRIM_HORIZON`);
      const out = await streams!.send(new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: shard.id, ShardIteratorType: 'TRIM_HORIZON' }), {
        abortSignal: abort.signal,
      });
      return out.ShardIterator;
    }
  }

  return {
    all: () => [...shards.values()],
    get: (id) => shards.get(id),

    async open() {
      abort = new AbortController();
      shards = new Map();
      streamArn = undefined;
      dynamo = new DynamoDBClient(clientConfig);
      streams = new DynamoDBStreamsClient(clientConfig);
      options.onStreamsClient?.(streams);
      try {
        await refresh(true);
        for (const shard of shards.values()) {
          if (!shard.ended) shard.iterator = await acquireIterator(shard);
        }
      } catch (error) {
        dynamo.destroy();
        streams.destroy();
        throw error;
      }
    },

    async refreshIfDue() {
      if (now() >= nextRefreshAt) await refresh(false);
    },

    async read(shard) {
      shard.iterator ??= await acquireIterator(shard);
      if (!shard.iterator) {
        shard.ended = true;
        return [];
      }
      let out: GetRecordsCommandOutput;
      try {
        out = await streams!.send(new GetRecordsCommand({ ShardIterator: shard.iterator, Limit: options.batchSize }), { abortSignal: abort.signal });
      } catch (error) {
        // Expired or otherwise unusable: the next read gets a fresh one from lastFetched.
        shard.iterator = undefined;
        throw error;
      }
      shard.lastFetched = out.Records?.findLast((r) => r.dynamodb?.SequenceNumber)?.dynamodb?.SequenceNumber ?? shard.lastFetched;
      shard.iterator = out.NextShardIterator;
      if (!out.NextShardIterator) {
        shard.ended = true;
        // A closed shard means children exist (or soon will): look now rather than at the next refresh.
        nextRefreshAt = 0;
      }
      return (out.Records ?? []).map((record) => toLambdaRecord(record, streamArn!, options.awsRegion));
    },

    abortCalls() {
      abort.abort();
    },

    close() {
      dynamo?.destroy();
      streams?.destroy();
    },
  };
}
