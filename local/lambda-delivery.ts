import type { DynamoDBRecord, DynamoDBStreamHandler } from 'aws-lambda';

/**
 * The delivery rules of Lambda's DynamoDB stream event source mapping with ReportBatchItemFailures,
 * BisectBatchOnFunctionError and a bounded MaximumRetryAttempts, free of I/O so each rule is tested on its own.
 * A lane is one ordered run of records (a shard): its head blocks everything behind it until it is acknowledged
 * or set aside, which is what keeps a key's changes in order.
 */

export interface DeliveryPolicy {
  /** Records per handler call. */
  batchSize: number;
  /** Retries of a failing record after its first failure before it is set aside. */
  maxRetries: number;
  /** First retry delay; doubles per attempt, capped at `maxBackoffMs`. */
  retryDelayMs: number;
  /** BisectBatchOnFunctionError: a thrown batch is split in two to isolate the record that breaks it. Default true. */
  bisectOnError?: boolean;
  /** MaximumRecordAgeInSeconds, in ms: an older record is not delivered but sent to the failure destination. None when absent. */
  maxRecordAgeMs?: number;
}

export const maxBackoffMs = 30_000;

export interface PendingRecord {
  record: DynamoDBRecord;
  /** Failed deliveries charged to this record so far. */
  attempts: number;
}

export interface Lane {
  pending: readonly PendingRecord[];
  /** Records per call; shrinks after a thrown batch to isolate the record that breaks it. */
  limit: number;
  /** Epoch ms before which the lane must not be delivered (retry backoff). */
  notBefore: number;
}

/** What a stream handler resolves to under Lambda's contract (aws-lambda's types): a partial batch response, or nothing. */
export type StreamHandlerResult = Awaited<ReturnType<DynamoDBStreamHandler>>;

/** What one handler call came to. */
export type Invocation = { kind: 'returned'; response: StreamHandlerResult } | { kind: 'threw'; error: string };

export type Settlement =
  | { kind: 'acknowledged' }
  /** A thrown batch of several records is split without charging anyone an attempt. */
  | { kind: 'bisected'; limit: number }
  | { kind: 'retry'; record: DynamoDBRecord; attempts: number; delayMs: number; error: string }
  | { kind: 'set-aside'; record: DynamoDBRecord; attempts: number; error: string };

export interface Settled {
  lane: Lane;
  /** Records at the head of the batch that left the lane as delivered. */
  acknowledged: number;
  outcome: Settlement;
}

export function emptyLane(policy: DeliveryPolicy): Lane {
  return { pending: [], limit: policy.batchSize, notBefore: 0 };
}

export function enqueue(lane: Lane, records: readonly DynamoDBRecord[]): Lane {
  return { ...lane, pending: [...lane.pending, ...records.map((record) => ({ record, attempts: 0 }))] };
}

/** The lane less its records older than the policy's maximum record age (stream records carry their age to the second). */
export function withoutExpired(policy: DeliveryPolicy, lane: Lane, now: number): { lane: Lane; expired: DynamoDBRecord[] } {
  const maxAgeMs = policy.maxRecordAgeMs;
  if (maxAgeMs === undefined) return { lane, expired: [] };
  const expired: DynamoDBRecord[] = [];
  const kept = lane.pending.filter(({ record }) => {
    const createdAt = record.dynamodb?.ApproximateCreationDateTime;
    const old = createdAt !== undefined && now - createdAt * 1000 > maxAgeMs;
    if (old) expired.push(record);
    return !old;
  });
  return expired.length === 0 ? { lane, expired } : { lane: { ...lane, pending: kept }, expired };
}

/** The records of the next handler call: the head of the lane, up to its current limit. */
export function nextBatch(lane: Lane): DynamoDBRecord[] {
  return lane.pending.slice(0, lane.limit).map((p) => p.record);
}

/**
 * Whether the lane may move now: not backing off, and its parent lane (if any) finished first, so a key's changes
 * arrive in order across a shard roll.
 */
export function mayDeliver(lane: Lane, now: number, parentFinished = true): boolean {
  return lane.notBefore <= now && parentFinished;
}

/**
 * Lambda's partial batch response contract: the lowest failed sequence number is where processing resumes; a
 * missing, empty or unknown identifier fails the whole batch. Returns -1 when every record succeeded.
 */
export function firstFailure(response: StreamHandlerResult, records: readonly DynamoDBRecord[]): number {
  const failures = response?.batchItemFailures;
  if (!Array.isArray(failures) || failures.length === 0) return -1;
  let first = records.length;
  for (const failure of failures) {
    const id = failure?.itemIdentifier;
    const index = typeof id === 'string' && id !== '' ? records.findIndex((r) => r.dynamodb?.SequenceNumber === id) : -1;
    if (index < 0) return 0;
    first = Math.min(first, index);
  }
  return first;
}

export function retryDelay(policy: DeliveryPolicy, attempts: number): number {
  return Math.min(policy.retryDelayMs * 2 ** (attempts - 1), maxBackoffMs);
}

/** The lane after the call that delivered `nextBatch(lane)` (of `batchLength` records) came to `invocation`. */
export function settle(policy: DeliveryPolicy, lane: Lane, batchLength: number, invocation: Invocation, now: number): Settled {
  const thrown = invocation.kind === 'threw';
  const failedAt = thrown ? 0 : firstFailure(invocation.response, nextBatch(lane).slice(0, batchLength));
  if (failedAt < 0) {
    return {
      lane: { pending: lane.pending.slice(batchLength), limit: policy.batchSize, notBefore: 0 },
      acknowledged: batchLength,
      outcome: { kind: 'acknowledged' },
    };
  }
  if (thrown && batchLength > 1 && policy.bisectOnError !== false) {
    const limit = Math.ceil(batchLength / 2);
    return { lane: { ...lane, limit }, acknowledged: 0, outcome: { kind: 'bisected', limit } };
  }
  const error = thrown ? invocation.error : 'reported as a batch item failure';
  const rest = lane.pending.slice(failedAt);
  const head = { ...rest[0]!, attempts: rest[0]!.attempts + 1 };
  if (head.attempts > policy.maxRetries) {
    return {
      lane: { pending: rest.slice(1), limit: policy.batchSize, notBefore: 0 },
      acknowledged: failedAt,
      outcome: { kind: 'set-aside', record: head.record, attempts: head.attempts, error },
    };
  }
  const delayMs = retryDelay(policy, head.attempts);
  return {
    lane: { pending: [head, ...rest.slice(1)], limit: lane.limit, notBefore: now + delayMs },
    acknowledged: failedAt,
    outcome: { kind: 'retry', record: head.record, attempts: head.attempts, delayMs, error },
  };
}
