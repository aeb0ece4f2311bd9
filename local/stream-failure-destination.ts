import type { DynamoDBRecord } from 'aws-lambda';

/**
 * What Lambda's event source mapping sends its on-failure destination (the stack's StreamFailures queue) when it gives
 * up on records: where they were in the stream, never the records themselves. Whoever reads the queue must go back
 * to the stream (24 h) or the table for them; the sweep finishes the work they would have started.
 */
export interface StreamFailureEntry {
  /** Out of retries (MaximumRetryAttempts), or too old to deliver (MaximumRecordAgeInSeconds). */
  condition: 'RetryAttemptsExhausted' | 'RecordAgeExceeded';
  shardId: string;
  startSequenceNumber: string;
  endSequenceNumber: string;
  /** ISO times the first and last record reached the stream. */
  approximateArrivalOfFirstRecord: string;
  approximateArrivalOfLastRecord: string;
  batchSize: number;
  streamArn: string;
  /** Epoch ms when the poller gave up on them. */
  at: number;
}

const arrival = (record: DynamoDBRecord) => new Date((record.dynamodb?.ApproximateCreationDateTime ?? 0) * 1000).toISOString();

/** The entry for `records` (one shard's, in stream order, at least one) given up on for `condition`. */
export function failureEntry(condition: StreamFailureEntry['condition'], shardId: string, records: readonly DynamoDBRecord[], at: number): StreamFailureEntry {
  const first = records[0]!;
  const last = records.at(-1)!;
  return {
    condition,
    shardId,
    startSequenceNumber: first.dynamodb?.SequenceNumber ?? '',
    endSequenceNumber: last.dynamodb?.SequenceNumber ?? '',
    approximateArrivalOfFirstRecord: arrival(first),
    approximateArrivalOfLastRecord: arrival(last),
    batchSize: records.length,
    streamArn: first.eventSourceARN ?? '',
    at,
  };
}
