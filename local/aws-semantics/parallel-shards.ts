import type { StreamPollerOptions } from '#local/stream-poller.ts';
import type { StreamMappingSettings } from '#lib/stream-mapping.ts';

/**
 * The `parallel-shards` mode: the local poller delivers as the stack's event source mapping does. A table in AWS has
 * its stream in several shards (one per partition), read at once, each in up to ParallelizationFactor lanes;
 * DynamoDB Local has one shard, so the poller splits it into as many lanes by partition key.
 */
export const EMULATED_STREAM_SHARDS = 4;

/** Lambda's largest MaximumRetryAttempts, standing in for -1 (retry until the record expires). */
const UNBOUNDED_RETRIES = 10_000;

/**
 * The poller's settings for the mapping as the template has it; its lanes only under `parallel-shards`, as without
 * the mode the poller keeps to one shard and one handler call at a time.
 */
export function pollerSettingsOf(
  mapping: StreamMappingSettings,
  { parallelShards }: { parallelShards: boolean },
): Required<Pick<StreamPollerOptions, 'batchSize' | 'maxRetries' | 'bisectOnError'>> & Pick<StreamPollerOptions, 'maxRecordAgeMs' | 'parallel'> {
  return {
    batchSize: mapping.batchSize,
    maxRetries: mapping.maximumRetryAttempts < 0 ? UNBOUNDED_RETRIES : mapping.maximumRetryAttempts,
    bisectOnError: mapping.bisectBatchOnFunctionError,
    ...(mapping.maximumRecordAgeSeconds < 0 ? {} : { maxRecordAgeMs: mapping.maximumRecordAgeSeconds * 1000 }),
    ...(parallelShards ? { parallel: { lanesPerShard: EMULATED_STREAM_SHARDS * mapping.parallelizationFactor } } : {}),
  };
}
