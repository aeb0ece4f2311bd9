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

/** A record set aside after its retries, kept in memory for GET /health and the tests. */
export interface SetAsideRecord {
  record: DynamoDBRecord;
  shardId: string;
  attempts: number;
  error: string;
  /** Epoch ms. */
  at: number;
}

/** What the poller counts of the records it gave up on (a part of its stats). */
export interface GivenUpCounts {
  setAside: number;
  expired: number;
  failureEntries: number;
}

/**
 * The poller's bookkeeping of what it gave up on: records set aside after their retries and runs of records too old
 * to deliver, each sent to the failure destination as Lambda sends it. Only the most recent `keep` are held; the
 * counts are never capped.
 */
export function createGivenUp(options: { keep: number; counts: GivenUpCounts; log: (line: string) => void; now: () => number }) {
  const { keep, counts, log, now } = options;
  const setAsideList: SetAsideRecord[] = [];
  const failureList: StreamFailureEntry[] = [];
  const held = <T>(list: T[], item: T) => {
    if (keep === 0) return;
    list.push(item);
    if (list.length > keep) list.shift();
  };
  const send = (entry: StreamFailureEntry) => {
    counts.failureEntries++;
    held(failureList, entry);
  };
  return {
    setAside(record: DynamoDBRecord, shardId: string, attempts: number, error: string): void {
      counts.setAside++;
      held(setAsideList, { record, shardId, attempts, error, at: now() });
      send(failureEntry('RetryAttemptsExhausted', shardId, [record], now()));
      log(`stream-poller: SET ASIDE ${describeRecord(record)} after ${attempts} attempts, moving on: ${error}`);
    },
    expire(records: DynamoDBRecord[], shardId: string): void {
      counts.expired += records.length;
      send(failureEntry('RecordAgeExceeded', shardId, records, now()));
      log(`stream-poller: ${records.length} record(s) of ${shardId} older than the maximum record age, not delivered: ${describeRecord(records[0]!)} first`);
    },
    setAsideRecords: (): SetAsideRecord[] => setAsideList.map((entry) => ({ ...entry })),
    failures: (): StreamFailureEntry[] => failureList.map((entry) => ({ ...entry })),
  };
}

/** A record as a log line names it: its event, keys and sequence number. */
export function describeRecord(record: DynamoDBRecord): string {
  const keys = Object.entries(record.dynamodb?.Keys ?? {})
    .map(([name, value]) => `${name}=${value.S ?? value.N ?? value.B ?? '?'}`)
    .join(' ');
  return `${record.eventName ?? 'record'} ${keys} (seq ${record.dynamodb?.SequenceNumber})`;
}
