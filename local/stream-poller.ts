import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type AttributeValue as SdkAttributeValue,
  type Shard,
  type _Record as SdkRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { AttributeValue, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';

/**
 * The local stand-in for Lambda's DynamoDB stream event source mapping (with ReportBatchItemFailures, a bounded
 * MaximumRetryAttempts and BisectBatchOnFunctionError): reads the table's real stream on DynamoDB Local and hands
 * the stream handler batches in exactly the shape Lambda would.
 */

export type StartPosition = 'TRIM_HORIZON' | 'LATEST';

export interface StreamPollerOptions {
  /** DynamoDB Local endpoint. */
  endpoint: string;
  tableName: string;
  handler: (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse | void>;
  /** Where to begin in the shards that exist when the poller starts; shards that appear later are read whole. */
  startAt?: StartPosition;
  /** Records per handler call, per shard (1..1000, GetRecords' limit). Default 100. */
  batchSize?: number;
  /** Pause between polls when there is nothing to do. Default 100 ms. */
  pollIntervalMs?: number;
  /** Retries of a failing record after its first failure before it is set aside. Default 3. */
  maxRetries?: number;
  /** First retry delay; doubles per attempt, capped at 30 s. Default 200 ms. */
  retryDelayMs?: number;
  /** How often to look for new shards while nothing closes. Default 5000 ms. */
  shardRefreshMs?: number;
  /** Region to report in records; DynamoDB Local reports `ddblocal`. */
  awsRegion?: string;
  /** How many set-aside records to keep in memory (the count in stats is never capped). Default 1000. */
  keepSetAside?: number;
  log?: (line: string) => void;
  now?: () => number;
}

export interface SetAsideRecord {
  record: DynamoDBRecord;
  shardId: string;
  attempts: number;
  error: string;
  /** Epoch ms. */
  at: number;
}

export interface StreamPollerStats {
  /** Records the handler acknowledged. */
  delivered: number;
  setAside: number;
  /** Handler calls that redelivered records after a failure (including bisecting a failed batch). */
  retries: number;
  invocations: number;
  lastError?: string;
}

export interface StreamPoller {
  /** Resolves once every shard has an iterator, so with `LATEST` anything written afterwards is delivered. */
  start(): Promise<void>;
  /** Ends polling and waits for an in-flight handler call; leaves no timers or sockets behind. */
  stop(): Promise<void>;
  running(): boolean;
  stats(): StreamPollerStats;
  setAside(): SetAsideRecord[];
  /**
   * Resolves after a full pass, begun after this call, finds every shard drained: what was written before the
   * call has been delivered or set aside. For tests and the local runner, not for production logic.
   */
  whenIdle(timeoutMs?: number): Promise<void>;
}

interface Pending {
  record: DynamoDBRecord;
  attempts: number;
}

interface ShardState {
  id: string;
  parentId?: string;
  initial: StartPosition;
  iterator?: string;
  /** GetRecords returned no next iterator: the shard is closed and fully read. */
  ended: boolean;
  /** Last sequence number pulled into `pending`, to resume after an iterator is lost. */
  lastFetched?: string;
  pending: Pending[];
  /** Records per call; halved after a thrown batch to isolate the record that breaks it. */
  limit: number;
  notBefore: number;
}

interface IdleWaiter {
  afterPass: number;
  resolve: () => void;
  reject: (error: Error) => void;
}

const maxBackoffMs = 30_000;

export function createStreamPoller(options: StreamPollerOptions): StreamPoller {
  const batchSize = bounded('batchSize', options.batchSize ?? 100, 1, 1000);
  const pollIntervalMs = bounded('pollIntervalMs', options.pollIntervalMs ?? 100, 1, 60_000);
  const maxRetries = bounded('maxRetries', options.maxRetries ?? 3, 0, 10_000);
  const retryDelayMs = bounded('retryDelayMs', options.retryDelayMs ?? 200, 0, maxBackoffMs);
  const shardRefreshMs = bounded('shardRefreshMs', options.shardRefreshMs ?? 5000, 1, 3_600_000);
  const keepSetAside = bounded('keepSetAside', options.keepSetAside ?? 1000, 0, 1_000_000);
  const startAt = options.startAt ?? 'TRIM_HORIZON';
  const log = options.log ?? ((line: string) => console.log(line));
  const now = options.now ?? Date.now;
  const clientConfig = {
    endpoint: options.endpoint,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  };

  const counters: StreamPollerStats = { delivered: 0, setAside: 0, retries: 0, invocations: 0 };
  const setAsideList: SetAsideRecord[] = [];
  let shards = new Map<string, ShardState>();
  let streamArn: string | undefined;
  let nextRefreshAt = 0;
  let dynamo: DynamoDBClient | undefined;
  let streams: DynamoDBStreamsClient | undefined;
  let abort = new AbortController();
  let stopping = false;
  let loop: Promise<void> | undefined;
  let alive = false;
  let wake: (() => void) | undefined;
  let passesStarted = 0;
  let idleWaiters: IdleWaiter[] = [];

  function note(error: unknown): string {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    counters.lastError = message;
    return message;
  }

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      wake = done;
    });
  }

  async function describeStreamArn(): Promise<string> {
    const { Table } = await dynamo!.send(new DescribeTableCommand({ TableName: options.tableName }), {
      abortSignal: abort.signal,
    });
    if (!Table?.LatestStreamArn || !Table.StreamSpecification?.StreamEnabled) {
      throw new Error(`table ${options.tableName} has no stream enabled`);
    }
    return Table.LatestStreamArn;
  }

  async function listShards(arn: string): Promise<Shard[]> {
    const all: Shard[] = [];
    let exclusiveStartShardId: string | undefined;
    do {
      const { StreamDescription } = await streams!.send(
        new DescribeStreamCommand({ StreamArn: arn, ExclusiveStartShardId: exclusiveStartShardId }),
        { abortSignal: abort.signal },
      );
      all.push(...(StreamDescription?.Shards ?? []));
      exclusiveStartShardId = StreamDescription?.LastEvaluatedShardId;
    } while (exclusiveStartShardId);
    return all;
  }

  async function refreshShards(initial: boolean): Promise<void> {
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
      const initialPosition: StartPosition = initial ? startAt : 'TRIM_HORIZON';
      const closed = shard.SequenceNumberRange?.EndingSequenceNumber !== undefined;
      shards.set(id, {
        id,
        parentId: shard.ParentShardId,
        initial: initialPosition,
        // LATEST on a closed shard can never yield anything.
        ended: closed && initialPosition === 'LATEST',
        pending: [],
        limit: batchSize,
        notBefore: 0,
      });
    }
    for (const [id, shard] of shards) {
      // Trimmed away by the stream's retention; forget it once we are done with it.
      if (!listedIds.has(id) && shard.ended && shard.pending.length === 0) shards.delete(id);
    }
    nextRefreshAt = now() + shardRefreshMs;
  }

  async function acquireIterator(shard: ShardState): Promise<string | undefined> {
    const resume = shard.lastFetched;
    const input = resume
      ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER' as const, SequenceNumber: resume }
      : { ShardIteratorType: shard.initial };
    try {
      const out = await streams!.send(
        new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: shard.id, ...input }),
        { abortSignal: abort.signal },
      );
      return out.ShardIterator;
    } catch (error) {
      if ((error as Error).name !== 'TrimmedDataAccessException' || !resume) throw error;
      log(`stream-poller: records after ${resume} in ${shard.id} were trimmed before we read them; resuming at TRIM_HORIZON`);
      const out = await streams!.send(
        new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: shard.id, ShardIteratorType: 'TRIM_HORIZON' }),
        { abortSignal: abort.signal },
      );
      return out.ShardIterator;
    }
  }

  async function fetch(shard: ShardState): Promise<void> {
    shard.iterator ??= await acquireIterator(shard);
    if (!shard.iterator) {
      shard.ended = true;
      return;
    }
    let out;
    try {
      out = await streams!.send(new GetRecordsCommand({ ShardIterator: shard.iterator, Limit: batchSize }), {
        abortSignal: abort.signal,
      });
    } catch (error) {
      // Expired or otherwise unusable: the next pass gets a fresh one from lastFetched.
      shard.iterator = undefined;
      throw error;
    }
    for (const record of out.Records ?? []) {
      shard.pending.push({ record: toLambdaRecord(record, streamArn!, options.awsRegion), attempts: 0 });
      shard.lastFetched = record.dynamodb?.SequenceNumber ?? shard.lastFetched;
    }
    shard.iterator = out.NextShardIterator;
    if (!out.NextShardIterator) {
      shard.ended = true;
      // A closed shard means children exist (or soon will): look now rather than at the next refresh.
      nextRefreshAt = 0;
    }
  }

  function setAsideHead(shard: ShardState, error: string): void {
    const head = shard.pending.shift()!;
    const entry: SetAsideRecord = { record: head.record, shardId: shard.id, attempts: head.attempts, error, at: now() };
    counters.setAside++;
    if (keepSetAside > 0) {
      setAsideList.push(entry);
      if (setAsideList.length > keepSetAside) setAsideList.shift();
    }
    log(
      `stream-poller: SET ASIDE ${describe(head.record)} after ${head.attempts} attempts, moving on: ${error}`,
    );
  }

  async function deliver(shard: ShardState): Promise<void> {
    const batch = shard.pending.slice(0, shard.limit);
    const records = batch.map((p) => p.record);
    counters.invocations++;
    let failedAt: number;
    let thrown = false;
    let error = 'reported as a batch item failure';
    try {
      // A fresh copy per call, as Lambda deserializes a fresh event: a handler mutating it cannot leak into retries.
      failedAt = firstFailure(await options.handler({ Records: structuredClone(records) }), records);
    } catch (caught) {
      thrown = true;
      failedAt = 0;
      error = note(caught);
    }
    const acknowledged = failedAt < 0 ? batch.length : failedAt;
    shard.pending.splice(0, acknowledged);
    counters.delivered += acknowledged;
    if (failedAt < 0) {
      shard.limit = batchSize;
      return;
    }
    if (thrown && batch.length > 1) {
      // Which record broke the batch is unknown: split it, as BisectBatchOnFunctionError does, without
      // charging an attempt to anyone.
      shard.limit = Math.ceil(batch.length / 2);
      counters.retries++;
      return;
    }
    const head = shard.pending[0]!;
    head.attempts++;
    if (!thrown) counters.lastError = `${describe(head.record)} ${error}`;
    if (head.attempts > maxRetries) {
      setAsideHead(shard, error);
      shard.limit = batchSize;
      return;
    }
    counters.retries++;
    const delay = Math.min(retryDelayMs * 2 ** (head.attempts - 1), maxBackoffMs);
    shard.notBefore = now() + delay;
    log(`stream-poller: ${describe(head.record)} failed (attempt ${head.attempts}/${maxRetries + 1}), retrying in ${delay} ms: ${error}`);
  }

  function isDone(shard: ShardState): boolean {
    return shard.ended && shard.pending.length === 0;
  }

  function ready(shard: ShardState): boolean {
    if (isDone(shard) || shard.notBefore > now()) return false;
    // Parent before child, so a key's changes arrive in order across a shard roll.
    const parent = shard.parentId ? shards.get(shard.parentId) : undefined;
    return !parent || isDone(parent);
  }

  /** One step on one shard; true when it did something worth looping again for at once. */
  async function pump(shard: ShardState): Promise<boolean> {
    if (shard.pending.length === 0) {
      if (shard.ended) return false;
      await fetch(shard);
      if (shard.pending.length === 0) return shard.ended;
    }
    await deliver(shard);
    return true;
  }

  async function pass(): Promise<boolean> {
    passesStarted++;
    if (now() >= nextRefreshAt) await refreshShards(false);
    let worked = false;
    for (const shard of [...shards.values()]) {
      if (stopping) break;
      if (!ready(shard)) continue;
      try {
        if (await pump(shard)) worked = true;
      } catch (error) {
        if (stopping) break;
        shard.notBefore = now() + Math.max(pollIntervalMs, 1000);
        log(`stream-poller: reading ${shard.id} failed, retrying: ${note(error)}`);
      }
    }
    return worked;
  }

  function settleIdleWaiters(passNumber: number): void {
    const drained = [...shards.values()].every((s) => s.pending.length === 0 && (s.ended || s.notBefore <= now()));
    if (!drained) return;
    const waiting: IdleWaiter[] = [];
    for (const waiter of idleWaiters) {
      if (passNumber > waiter.afterPass) waiter.resolve();
      else waiting.push(waiter);
    }
    idleWaiters = waiting;
  }

  function idleDelay(): number {
    let delay = pollIntervalMs;
    for (const shard of shards.values()) {
      const wait = shard.notBefore - now();
      if (!isDone(shard) && wait > 0) delay = Math.min(delay, wait);
    }
    return delay;
  }

  async function run(): Promise<void> {
    alive = true;
    let consecutiveFailures = 0;
    try {
      while (!stopping) {
        try {
          const worked = await pass();
          consecutiveFailures = 0;
          if (!worked) {
            settleIdleWaiters(passesStarted);
            if (!stopping) await sleep(idleDelay());
          }
        } catch (error) {
          if (stopping) break;
          consecutiveFailures++;
          const delay = Math.min(pollIntervalMs * 2 ** consecutiveFailures, 5000);
          log(`stream-poller: polling ${options.tableName} failed, retrying in ${delay} ms: ${note(error)}`);
          await sleep(delay);
        }
      }
    } finally {
      alive = false;
    }
  }

  return {
    async start() {
      if (loop) return;
      stopping = false;
      abort = new AbortController();
      shards = new Map();
      streamArn = undefined;
      dynamo = new DynamoDBClient(clientConfig);
      streams = new DynamoDBStreamsClient(clientConfig);
      try {
        await refreshShards(true);
        // Take iterators now: with LATEST, "latest" must mean the moment start() resolved.
        for (const shard of shards.values()) {
          if (!shard.ended) shard.iterator = await acquireIterator(shard);
        }
      } catch (error) {
        dynamo.destroy();
        streams.destroy();
        throw error;
      }
      log(`stream-poller: polling ${options.tableName} (${shards.size} shard(s), from ${startAt})`);
      loop = run();
    },

    async stop() {
      if (!loop) return;
      stopping = true;
      abort.abort();
      wake?.();
      await loop;
      loop = undefined;
      dynamo?.destroy();
      streams?.destroy();
      for (const waiter of idleWaiters) waiter.reject(new Error('stream poller stopped'));
      idleWaiters = [];
    },

    running() {
      return alive && !stopping;
    },

    stats() {
      return { ...counters };
    },

    setAside() {
      return setAsideList.map((entry) => ({ ...entry }));
    },

    whenIdle(timeoutMs = 10_000) {
      if (!alive || stopping) return Promise.reject(new Error('stream poller is not running'));
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          idleWaiters = idleWaiters.filter((w) => w !== waiter);
          reject(new Error(`stream poller not idle within ${timeoutMs} ms`));
        }, timeoutMs);
        const waiter: IdleWaiter = {
          afterPass: passesStarted,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
          reject: (error) => {
            clearTimeout(timer);
            reject(error);
          },
        };
        idleWaiters.push(waiter);
        wake?.();
      });
    },
  };
}

/**
 * Lambda's partial batch response contract: the lowest failed sequence number is where processing resumes; a
 * missing, empty or unknown identifier fails the whole batch. Returns -1 when every record succeeded.
 */
function firstFailure(response: DynamoDBBatchResponse | void, records: DynamoDBRecord[]): number {
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

/** A record as Lambda delivers it: plain JSON, epoch seconds, base64 binaries, the stream ARN as its source. */
export function toLambdaRecord(record: SdkRecord, eventSourceARN: string, awsRegion?: string): DynamoDBRecord {
  const source = record.dynamodb ?? {};
  const dynamodb: NonNullable<DynamoDBRecord['dynamodb']> = {};
  if (source.ApproximateCreationDateTime) {
    dynamodb.ApproximateCreationDateTime = Math.floor(source.ApproximateCreationDateTime.getTime() / 1000);
  }
  if (source.Keys) dynamodb.Keys = toImage(source.Keys);
  if (source.NewImage) dynamodb.NewImage = toImage(source.NewImage);
  if (source.OldImage) dynamodb.OldImage = toImage(source.OldImage);
  if (source.SequenceNumber !== undefined) dynamodb.SequenceNumber = source.SequenceNumber;
  if (source.SizeBytes !== undefined) dynamodb.SizeBytes = source.SizeBytes;
  if (source.StreamViewType) dynamodb.StreamViewType = source.StreamViewType;
  const out: DynamoDBRecord = {
    eventID: record.eventID,
    eventName: record.eventName,
    eventVersion: record.eventVersion,
    eventSource: 'aws:dynamodb',
    awsRegion: awsRegion ?? record.awsRegion,
    dynamodb,
    eventSourceARN,
  };
  if (record.userIdentity) {
    out.userIdentity = { type: record.userIdentity.Type, principalId: record.userIdentity.PrincipalId };
  }
  return out;
}

function toImage(image: Record<string, SdkAttributeValue>): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const [name, value] of Object.entries(image)) out[name] = toAttributeValue(value);
  return out;
}

function toAttributeValue(value: SdkAttributeValue): AttributeValue {
  if (value.S !== undefined) return { S: value.S };
  if (value.N !== undefined) return { N: value.N };
  if (value.B !== undefined) return { B: base64(value.B) };
  if (value.BOOL !== undefined) return { BOOL: value.BOOL };
  if (value.NULL !== undefined) return { NULL: value.NULL };
  if (value.SS !== undefined) return { SS: [...value.SS] };
  if (value.NS !== undefined) return { NS: [...value.NS] };
  if (value.BS !== undefined) return { BS: value.BS.map(base64) };
  if (value.L !== undefined) return { L: value.L.map(toAttributeValue) };
  if (value.M !== undefined) return { M: toImage(value.M) };
  // DynamoDB Local writes an empty map into stream images as `{}` instead of `{ "M": {} }`.
  if (Object.keys(value).length === 0) return { M: {} };
  throw new Error(`unknown attribute value type: ${Object.keys(value).join(',')}`);
}

function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64');
}

function describe(record: DynamoDBRecord): string {
  const keys = Object.entries(record.dynamodb?.Keys ?? {})
    .map(([name, value]) => `${name}=${value.S ?? value.N ?? value.B ?? '?'}`)
    .join(' ');
  return `${record.eventName ?? 'record'} ${keys} (seq ${record.dynamodb?.SequenceNumber})`;
}

function bounded(name: string, value: number, min: number, max: number): number {
  if (!Number.isFinite(value) || value < min || value > max) {
    throw new RangeError(`${name} must be between ${min} and ${max}, got ${value}`);
  }
  return value;
}
