import { streamFilterPatterns } from './stream-filters.ts';

// The stream function's event source mapping, as values: the stack builds the mapping from them
// (lib/stream-reactions.ts) and the local runner's poller delivers by them, without loading CDK.
// test/cdk/stack-settings.test.ts holds them equal to the synthesized template's mapping.

/** The mapping as Lambda reads it (-1: no limit). */
export interface StreamMappingSettings {
  /** FilterCriteria.Filters[].Pattern: the JSON patterns as the template carries them. */
  filterPatterns: string[];
  batchSize: number;
  maximumRetryAttempts: number;
  maximumRecordAgeSeconds: number;
  bisectBatchOnFunctionError: boolean;
  parallelizationFactor: number;
}

/**
 * Records per invocation of the stream function. A burst (a registration, a first roster's walk) is then a few
 * invocations rather than dozens, and each is one run, in which an aggregate (a rack's summary item, a counter
 * shard) gathers its changes into one write: fewer invocations write it fewer times. Lambda sends less when the
 * batch would pass its 6 MB payload, and a reaction not done by the batch's deadline comes back in the next one
 * (`STREAM_RESERVE_MS`).
 */
export const STREAM_BATCH_SIZE = 500;

/** The mapping the stack deploys; the same for every site config. */
export function streamMappingSettings(): StreamMappingSettings {
  return {
    filterPatterns: streamFilterPatterns().map((pattern) => JSON.stringify(pattern)),
    batchSize: STREAM_BATCH_SIZE,
    // Bounded: a record that keeps failing is parked on the failure queue; the sweep finishes its work anyway.
    maximumRetryAttempts: 10,
    maximumRecordAgeSeconds: 3600,
    bisectBatchOnFunctionError: true,
    parallelizationFactor: 1,
  };
}
