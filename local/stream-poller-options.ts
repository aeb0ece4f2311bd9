import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { maxBackoffMs, type DeliveryPolicy, type StreamHandlerResult } from './lambda-delivery.ts';
import type { StreamChaosConfig } from './stream-chaos.ts';
import type { StartPosition } from './stream-shards.ts';

// What the local stream poller is configured with, as Lambda's event source mapping is, and the bounds AWS puts on
// each setting: a value out of them stops the poller's creation instead of behaving as no mapping could.

export interface StreamPollerOptions {
  /** DynamoDB Local endpoint. */
  endpoint: string;
  tableName: string;
  handler: (event: DynamoDBStreamEvent) => Promise<StreamHandlerResult>;
  /** Where to begin in the shards that exist when the poller starts; shards that appear later are read whole. */
  startAt?: StartPosition;
  /** Records per handler call, per shard (1..1000, GetRecords' limit). Default 100. */
  batchSize?: number;
  /** Pause between polls when there is nothing to do. Default 100 ms. */
  pollIntervalMs?: number;
  /** Retries of a failing record after its first failure before it is set aside. Default 3. */
  maxRetries?: number;
  /** Split a thrown batch in two to isolate the record that breaks it (BisectBatchOnFunctionError). Default true. */
  bisectOnError?: boolean;
  /** A record older than this is not delivered but sent to the failure destination (MaximumRecordAgeInSeconds). None by default. */
  maxRecordAgeMs?: number;
  /**
   * Run every shard, and `lanesPerShard` lanes within each, at once, as Lambda does (ParallelizationFactor, and more
   * virtual lanes for the table's partitions that DynamoDB Local folds into one shard). A partition key's records
   * share one lane, so their order holds. Absent: one shard at a time, one lane each, one handler call at a time.
   */
  parallel?: { lanesPerShard: number };
  /** First retry delay; doubles per attempt, capped at 30 s. Default 200 ms. */
  retryDelayMs?: number;
  /** How often to look for new shards while nothing closes. Default 5000 ms. */
  shardRefreshMs?: number;
  /** Region to report in records; DynamoDB Local reports `ddblocal`. */
  awsRegion?: string;
  /** How many set-aside records to keep in memory (the count in stats is never capped). Default 1000. */
  keepSetAside?: number;
  /**
   * The mapping's event filters: a record it refuses is dropped before batching, as Lambda drops it (counted in
   * `filteredOut`). Every record reaches the handler when absent.
   */
  filter?: (record: DynamoDBRecord) => boolean;
  /** Misdeliver on purpose (FLEETWARD_STREAM_CHAOS, see stream-chaos.ts). Off when absent. */
  chaos?: StreamChaosConfig;
  /** Called with each DynamoDB Streams client the poller makes, before its first call (the AWS call recorder). */
  onStreamsClient?: (client: DynamoDBStreamsClient) => void;
  log?: (line: string) => void;
  now?: () => number;
}

/** The poller's settings with their defaults, each checked against its bounds. */
export function settingsOf(options: StreamPollerOptions) {
  const policy: DeliveryPolicy = {
    batchSize: bounded('batchSize', options.batchSize ?? 100, 1, 1000),
    maxRetries: bounded('maxRetries', options.maxRetries ?? 3, 0, 10_000),
    retryDelayMs: bounded('retryDelayMs', options.retryDelayMs ?? 200, 0, maxBackoffMs),
    bisectOnError: options.bisectOnError ?? true,
    ...(options.maxRecordAgeMs === undefined ? {} : { maxRecordAgeMs: bounded('maxRecordAgeMs', options.maxRecordAgeMs, 0, 604_800_000) }),
  };
  return {
    policy,
    lanesPerShard: options.parallel ? bounded('lanesPerShard', options.parallel.lanesPerShard, 1, 1000) : 1,
    pollIntervalMs: bounded('pollIntervalMs', options.pollIntervalMs ?? 100, 1, 60_000),
    keepSetAside: bounded('keepSetAside', options.keepSetAside ?? 1000, 0, 1_000_000),
    shardRefreshMs: bounded('shardRefreshMs', options.shardRefreshMs ?? 5000, 1, 3_600_000),
  };
}

function bounded(name: string, value: number, min: number, max: number): number {
  if (!Number.isFinite(value) || value < min || value > max) {
    throw new RangeError(`${name} must be between ${min} and ${max}, got ${value}`);
  }
  return value;
}
