import type { DynamoDBRecord } from 'aws-lambda';
import { emptyLane, enqueue, mayDeliver, nextBatch, settle, withoutExpired, type Invocation, type Lane } from './lambda-delivery.ts';
import { createStreamChaos, type StreamChaos } from './stream-chaos.ts';
import { createIdleWaiters } from './idle-waiters.ts';
import { settingsOf, type StreamPollerOptions } from './stream-poller-options.ts';
import { createGivenUp, describeRecord as describe, type SetAsideRecord, type StreamFailureEntry } from './stream-failure-destination.ts';
import { createStreamShards, pendingIn, type ShardState, type StreamShards } from './stream-shards.ts';

/**
 * The local stand-in for Lambda's DynamoDB stream event source mapping: reads the table's real stream on DynamoDB
 * Local and hands the stream handler batches in exactly the shape Lambda would. How a batch is delivered, retried,
 * bisected or set aside is decided by lambda-delivery.ts, how shards are read by stream-shards.ts, what it is
 * configured with by stream-poller-options.ts and what it gave up on by stream-failure-destination.ts; this file
 * runs the passes over the shards and performs the handler calls, one at a time or, with `parallel`, a lane each at once.
 */

export type { SetAsideRecord, StreamPollerOptions };

export interface StreamPollerStats {
  /** Records the handler acknowledged. */
  delivered: number;
  /** Records the filters kept from the handler. */
  filteredOut: number;
  setAside: number;
  /** Records older than the maximum record age, sent to the failure destination undelivered. */
  expired: number;
  /** Entries sent to the failure destination: one per record set aside, one per run of expired records. */
  failureEntries: number;
  /** Handler calls that redelivered records after a failure (including bisecting a failed batch). */
  retries: number;
  /** Handler calls begun, one batch each. */
  invocations: number;
  /** Handler calls that ended, returned or threw: a batch whose reaction is over, whatever came of it. */
  handled: number;
  lastError?: string;
  /** Epoch ms when the last pass over the shards finished without a read error: how /health tells a stall. */
  lastPollAt?: number;
}

export interface StreamPoller {
  /** Resolves once every shard has an iterator, so with `LATEST` anything written afterwards is delivered. */
  start(): Promise<void>;
  /** Ends polling and waits for the handler calls in flight; leaves no timers or sockets behind. */
  stop(): Promise<void>;
  running(): boolean;
  stats(): StreamPollerStats;
  setAside(): SetAsideRecord[];
  /** What the failure destination got (the most recent `keepSetAside`), as Lambda sends it: positions, not records. */
  failures(): StreamFailureEntry[];
  /**
   * Resolves after a full pass, begun after this call, finds every shard drained: what was written before the
   * call has been delivered or set aside. For tests and the local runner, not for production logic.
   */
  whenIdle(timeoutMs?: number): Promise<void>;
}

export function createStreamPoller(options: StreamPollerOptions): StreamPoller {
  const { policy, lanesPerShard, pollIntervalMs, keepSetAside, shardRefreshMs } = settingsOf(options);
  const startAt = options.startAt ?? 'TRIM_HORIZON';
  const log = options.log ?? ((line: string) => console.log(line));
  const now = options.now ?? Date.now;
  const shards: StreamShards = createStreamShards({
    endpoint: options.endpoint,
    tableName: options.tableName,
    startAt,
    batchSize: policy.batchSize,
    shardRefreshMs,
    ...(options.awsRegion ? { awsRegion: options.awsRegion } : {}),
    emptyLanes: () => Array.from({ length: lanesPerShard }, () => emptyLane(policy)),
    ...(options.onStreamsClient ? { onStreamsClient: options.onStreamsClient } : {}),
    log,
    now,
  });

  const counters: StreamPollerStats = { delivered: 0, filteredOut: 0, setAside: 0, expired: 0, failureEntries: 0, retries: 0, invocations: 0, handled: 0 };
  const givenUp = createGivenUp({ keep: keepSetAside, counts: counters, log, now });
  const idleWaiters = createIdleWaiters();
  // Handler calls under way in parallel, by `<shard>#<lane>`: a lane has at most one.
  const inFlight = new Map<string, Promise<void>>();
  let stopping = false;
  let loop: Promise<void> | undefined;
  let alive = false;
  let wake: (() => void) | undefined;
  let passesStarted = 0;
  let chaos: StreamChaos | undefined;
  // Where the chaos puts what it moved out of the shards: no order at all, a key's records can be in both lanes.
  let sharedLane = emptyLane(policy);

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

  /** Reads the shard's next records into its lanes, less what the filters drop, arranged by the chaos if on. */
  async function fetch(shard: ShardState): Promise<void> {
    const read = await shards.read(shard);
    const fetched = options.filter ? read.filter(options.filter) : read;
    counters.filteredOut += read.length - fetched.length;
    const arranged = chaos ? chaos.arrange(fetched, now()) : fetched;
    const byLane = shard.lanes.map((): DynamoDBRecord[] => []);
    for (const record of arranged) byLane[laneIndexOf(record, byLane.length)]!.push(record);
    shard.lanes = shard.lanes.map((lane, index) => enqueue(lane, byLane[index]!));
  }

  /**
   * One handler call with the head of a lane, read through `current` and replaced through `update`: records read
   * meanwhile join the lane's tail, so the rules settle the lane as it is when the call ends.
   */
  async function deliver(shardId: string, current: () => Lane, update: (lane: Lane) => void): Promise<void> {
    const fresh = withoutExpired(policy, current(), now());
    if (fresh.expired.length > 0) {
      update(fresh.lane);
      givenUp.expire(fresh.expired, shardId);
    }
    const records = nextBatch(current());
    if (records.length === 0) return;
    counters.invocations++;
    let invocation: Invocation;
    try {
      // A fresh copy per call, as Lambda deserializes a fresh event: a handler mutating it cannot leak into retries.
      invocation = { kind: 'returned', response: await options.handler({ Records: structuredClone(records) }) };
    } catch (caught) {
      invocation = { kind: 'threw', error: note(caught) };
    }
    counters.handled++;
    const { lane: next, acknowledged, outcome } = settle(policy, current(), records.length, invocation, now());
    update(next);
    counters.delivered += acknowledged;
    switch (outcome.kind) {
      case 'acknowledged':
        break;
      case 'bisected':
        counters.retries++;
        break;
      case 'set-aside':
        if (invocation.kind === 'returned') counters.lastError = `${describe(outcome.record)} ${outcome.error}`;
        givenUp.setAside(outcome.record, shardId, outcome.attempts, outcome.error);
        break;
      case 'retry':
        if (invocation.kind === 'returned') counters.lastError = `${describe(outcome.record)} ${outcome.error}`;
        counters.retries++;
        log(
          `stream-poller: ${describe(outcome.record)} failed (attempt ${outcome.attempts}/${policy.maxRetries + 1}), ` +
            `retrying in ${outcome.delayMs} ms: ${outcome.error}`,
        );
        break;
    }
  }

  function isDone(shard: ShardState): boolean {
    return shard.ended && pendingIn(shard) === 0;
  }

  /** Not finished, and its parent (if any) finished first, so a key's changes arrive in order across a shard roll. */
  function ready(shard: ShardState): boolean {
    const parent = shard.parentId ? shards.get(shard.parentId) : undefined;
    return !isDone(shard) && (!parent || isDone(parent));
  }

  /** Reads more of the shard while less than a batch waits in it; true when that found the shard closed. */
  async function refill(shard: ShardState): Promise<boolean> {
    if (shard.ended || shard.readNotBefore > now() || pendingIn(shard) >= policy.batchSize) return false;
    await fetch(shard);
    return shard.ended;
  }

  /** Starts a handler call on each lane of the shard that may move; waits for each unless the poller runs in parallel. */
  async function pumpLanes(shard: ShardState): Promise<boolean> {
    let worked = false;
    for (const [index, lane] of shard.lanes.entries()) {
      const key = `${shard.id}#${index}`;
      if (stopping || lane.pending.length === 0 || inFlight.has(key) || !mayDeliver(lane, now())) continue;
      worked = true;
      const delivery = deliver(
        shard.id,
        () => shard.lanes[index]!,
        (next) => {
          shard.lanes[index] = next;
        },
      );
      if (!options.parallel) {
        await delivery;
        continue;
      }
      inFlight.set(
        key,
        delivery.finally(() => {
          inFlight.delete(key);
          wake?.();
        }),
      );
    }
    return worked;
  }

  async function pumpSharedLane(): Promise<boolean> {
    if (chaos) sharedLane = enqueue(sharedLane, chaos.release(now()));
    if (sharedLane.pending.length === 0 || !mayDeliver(sharedLane, now())) return false;
    await deliver(
      'chaos',
      () => sharedLane,
      (next) => {
        sharedLane = next;
      },
    );
    return true;
  }

  async function pass(): Promise<boolean> {
    passesStarted++;
    await shards.refreshIfDue();
    let worked = false;
    let readFailed = false;
    for (const shard of shards.all()) {
      if (stopping) break;
      if (!ready(shard)) continue;
      try {
        if (await refill(shard)) worked = true;
      } catch (error) {
        if (stopping) break;
        readFailed = true;
        shard.readNotBefore = now() + Math.max(pollIntervalMs, 1000);
        log(`stream-poller: reading ${shard.id} failed, retrying: ${note(error)}`);
      }
      if (await pumpLanes(shard)) worked = true;
    }
    if (!stopping && (await pumpSharedLane())) worked = true;
    if (!readFailed) counters.lastPollAt = now();
    return worked;
  }

  function settleIdleWaiters(passNumber: number): void {
    const drained =
      inFlight.size === 0 &&
      shards.all().every((s) => pendingIn(s) === 0 && (s.ended || s.readNotBefore <= now())) &&
      sharedLane.pending.length === 0 &&
      (chaos?.holding() ?? 0) === 0;
    if (drained) idleWaiters.drained(passNumber);
  }

  function idleDelay(): number {
    let delay = pollIntervalMs;
    const waits = shards
      .all()
      .filter((shard) => !isDone(shard))
      .flatMap((shard) => [shard.readNotBefore, ...shard.lanes.filter((lane) => lane.pending.length > 0).map((lane) => lane.notBefore)]);
    if (sharedLane.pending.length > 0) waits.push(sharedLane.notBefore);
    const release = chaos?.nextReleaseAt();
    if (release !== undefined) waits.push(release);
    for (const at of waits) if (at > now()) delay = Math.min(delay, at - now());
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
      sharedLane = emptyLane(policy);
      chaos = options.chaos ? createStreamChaos(options.chaos) : undefined;
      await shards.open();
      log(`stream-poller: polling ${options.tableName} (${shards.all().length} shard(s), from ${startAt})`);
      if (chaos) {
        const { modes, seed } = chaos.config;
        log(`stream-poller: CHAOS ${modes.join(',')} with seed ${seed} (FLEETWARD_STREAM_CHAOS_SEED=${seed} replays it)`);
      }
      loop = run();
    },

    async stop() {
      if (!loop) return;
      stopping = true;
      shards.abortCalls();
      wake?.();
      await loop;
      await Promise.allSettled(inFlight.values());
      loop = undefined;
      shards.close();
      idleWaiters.rejectAll(new Error('stream poller stopped'));
    },

    running() {
      return alive && !stopping;
    },

    stats() {
      return { ...counters };
    },

    setAside: givenUp.setAsideRecords,
    failures: givenUp.failures,

    whenIdle(timeoutMs = 10_000) {
      if (!alive || stopping) return Promise.reject(new Error('stream poller is not running'));
      const idle = idleWaiters.wait(passesStarted, timeoutMs);
      wake?.();
      return idle;
    },
  };
}

/** The lane of a record's partition key (FNV-1a of its `pk`), so one key's records stay in one lane, in order. */
function laneIndexOf(record: DynamoDBRecord, lanes: number): number {
  if (lanes === 1) return 0;
  const key = record.dynamodb?.Keys?.pk?.S ?? '';
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % lanes;
}
