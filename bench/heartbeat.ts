import { parseSiteConfig } from '#config/site-config.ts';
import { bucketSettled, REFRESH_DIVISOR } from '#domain/machines/heartbeat.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import type { Change } from '#domain/core/change.ts';
import type { Clock } from '#domain/core/model.ts';
import { createTables } from '#local/tables.ts';
import { heatReport, streamHeat, watchWriteTimes } from './partition-heat.ts';
import { demoFleet } from '#local/site-agent/demo-fleet.ts';
import type { AppContext, Log } from '#runtime/context.ts';
import { inProcessBus } from '#runtime/events.ts';
import { randomIds } from '#handlers/lambda-context.ts';
import { prometheusMetrics } from '#runtime/prometheus-metrics.ts';
import { allocatability } from '#domain/core/health.ts';
import { startRun } from '#reconcilers/runner.ts';
import { loadHeartbeatView } from '#runtime/heartbeat-view.ts';
import { receiveHeartbeat } from '#services/heartbeats.ts';
import { registerMachines } from '#services/machines.ts';
import { createDocumentClient } from '#store/client.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { countRequests, snapshot, type CapacityMetering } from './counter.ts';
import { watchJitCompilers } from './jvm-compiler.ts';
import { addCost, ratio, round, subtractCost, summarize, zeroCost, type Cost } from './stats.ts';

export interface HeartbeatBenchOptions {
  machines: number;
  timeoutSeconds: number;
  beatIntervalSeconds: number;
  idleSimulatedSeconds: number;
  /** Machines that leave the roster (and the previous ones come back) at each beat of the changing-roster stretch. */
  stopMachines: number;
  changingBeats: number;
}

export const defaultHeartbeatOptions: HeartbeatBenchOptions = {
  machines: 10_000,
  timeoutSeconds: 30,
  beatIntervalSeconds: 5,
  idleSimulatedSeconds: 600,
  stopMachines: 10,
  changingBeats: 40,
};

/** Bucket walks in flight at once: DynamoDB Local serialises transactions, so more only wait on its locks. */
const WALK_CONCURRENCY = 8;
/** How many times a failed walk is delivered again before the bench gives up. */
const WALK_DELIVERIES = 5;

/**
 * The bench's store, which knows when the first roster's walk is done: the commit that settles the last of its
 * buckets. Watched in this process, because asking DynamoDB Local would slow the very walk being timed: it serves
 * one request at a time.
 */
class SettleWatchingStore extends DynamoFleetStore {
  private readonly settledAt = new Map<string, number>();
  private readonly waiting = new Set<() => void>();

  override async commit(change: Change): Promise<void> {
    await super.commit(change);
    const settled = (change.rosterBuckets ?? []).map((bucket) => bucket.after).filter((bucket) => bucketSettled(bucket));
    if (settled.length === 0) return;
    for (const bucket of settled) this.settledAt.set(bucket.id, performance.now());
    for (const wake of this.waiting) wake();
  }

  /** When the last of `buckets` was committed settled (performance.now()), once all are. */
  async settled(buckets: string[]): Promise<number> {
    for (;;) {
      const times = buckets.map((id) => this.settledAt.get(id));
      if (times.every((at) => at !== undefined)) return Math.max(...times);
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.waiting.delete(wake);
          resolve();
        };
        this.waiting.add(wake);
      });
    }
  }
}

/** The goals for heartbeats and registration at 10,000 machines. */
export const heartbeatGoals = {
  beatP99Ms: 2_000,
  firstRosterToAllocatableMs: 20_000,
  writeUnitsPerLivenessChange: 2,
  idleWritesPerSecond: 0.2,
  registrationMs: 10_000,
};

const judged = (value: number, goal: number, unit: string, strictlyBelow = false) => ({
  unit,
  value: round(value, 3),
  goal,
  ratio: ratio(value, goal),
  meets_goal: strictlyBelow ? value < goal : value <= goal,
});

const costView = (cost: Cost) => ({
  writes: cost.writes,
  write_units: round(cost.writeUnits),
  read_units: round(cost.readUnits),
  requests: cost.requests,
});

/**
 * Heartbeats and registration at fleet scale, each headline figure against its goal. A context of its own (a store on
 * its own table, a fake clock, the default 30 s timeout; events and metrics as the local site wires them); the
 * service functions are called directly, as the heartbeat route does, so simulated minutes take seconds; what the
 * stream does with the buckets a beat changed (walk them) is run right after the beat, as a stream reaction would.
 */
export async function heartbeatCost(
  endpoint: string,
  id: string,
  options: HeartbeatBenchOptions,
  progress: (line: string) => void,
  /** DynamoDB Local's java: how much its JIT compilers overlapped registration and the first roster is reported. */
  javaPid?: number,
) {
  const tableName = `bench-heartbeat-${id}`;
  await createTables(endpoint, { table: tableName, idempotencyTable: `${tableName}-idempotency` });
  let nowMs = Date.parse('2030-01-01T00:00:00.000Z');
  const clock: Clock = { now: () => new Date(nowMs) };
  const client = createDocumentClient(endpoint);
  const store = new SettleWatchingStore(client, tableName, dueTimes);
  // The first roster is judged on its wall time and its write units: while it runs, only writes ask for capacity.
  let metering: CapacityMetering = 'all';
  const requests = countRequests(client, { capacity: () => metering });
  const log: Log = {
    info: () => {},
    warn: (m, f) => progress(`heartbeat ctx warn ${m} ${JSON.stringify(f ?? {})}`),
    error: (m, f) => progress(`heartbeat ctx error ${m} ${JSON.stringify(f ?? {})}`),
  };
  const noAgent = () => Promise.reject(new Error('bench: the heartbeat part never calls the site agent'));
  const ctx: AppContext = {
    store,
    // No validation after registration: this part measures heartbeats, and its context has no site agent.
    config: parseSiteConfig(
      `[site]\nname = "bench-heartbeat"\n[heartbeat]\ntimeout_seconds = ${options.timeoutSeconds}\n[validation]\nafter = []\n`,
      'heartbeat bench config',
    ),
    clock,
    ids: randomIds,
    agent: { create: noAgent, delete: noAgent, status: noAgent, startMaintenance: noAgent, validate: noAgent, power: noAgent },
    // As the local site wires them (local/runner.ts).
    events: inProcessBus(log),
    metrics: prometheusMetrics(),
    log,
  };
  const mark = () => snapshot(requests);
  // Registration is judged on its wall time alone: its requests are counted on a client of their own that does not
  // ask DynamoDB Local for capacity (see CounterOptions.capacity).
  const registrationClient = createDocumentClient(endpoint);
  const registrationRequests = countRequests(registrationClient, { capacity: () => 'none' });
  const writeTimes = watchWriteTimes([client, registrationClient]);
  const registrationCtx: AppContext = { ...ctx, store: new DynamoFleetStore(registrationClient, tableName, dueTimes) };
  // The 10,000-machine steps take a while: say how far they got now and then.
  const ticker = setInterval(() => progress(`heartbeat: ${requests.counts.TransactWriteItemsCommand ?? 0} transactions so far`), 15_000);
  ticker.unref();
  try {
    return await measure();
  } finally {
    clearInterval(ticker);
  }

  /**
   * What the stream does with the buckets a beat changed: walks them, in parallel, in one run; a failed batch is
   * delivered again, as the stream does (DynamoDB Local times out transactions waiting for its locks under load).
   */
  async function walk(buckets: string[]) {
    for (let delivery = 1; ; delivery++) {
      try {
        return await startRun(ctx, { concurrency: WALK_CONCURRENCY }).reconcile(buckets.map((id) => ({ entity: 'roster-bucket', id })));
      } catch (error) {
        if (delivery >= WALK_DELIVERIES) throw error;
        progress(`heartbeat: walk delivered again after ${String(error)}`);
      }
    }
  }

  async function liveCount(ids: string[]): Promise<number> {
    const view = await loadHeartbeatView(ctx);
    const machines = await store.getMachines(ids);
    return [...machines.values()].filter((m) => allocatability(m, view, clock.now()).allocatable).length;
  }

  async function measure() {
    // ---- registration: one call for the whole fleet ----
    const fleet = demoFleet([{ type: 'gb200', count: options.machines, racks: Math.ceil(options.machines / 8) }]);
    const ids = fleet.map((m) => m.id);
    progress(`heartbeat: registering ${ids.length} machines`);
    let compiling = watchJitCompilers(javaPid);
    let t = performance.now();
    await registerMachines(
      registrationCtx,
      fleet.map((m) => ({ id: m.id, machineType: m.machineType, rack: m.rack })),
      { actor: 'bench', requestId: 'bench-seed' },
    );
    const registrationMs = performance.now() - t;
    const registration = {
      wall_ms: round(registrationMs, 1),
      writes: registrationRequests.total.writes,
      requests: registrationRequests.counts,
      dynamodb_local_jit: compiling(),
    };

    // ---- the first roster after registration: the beat answers, the stream walks every bucket ----
    progress(`heartbeat: first roster of ${ids.length} machines`);
    metering = 'writes';
    let before = mark();
    compiling = watchJitCompilers(javaPid);
    t = performance.now();
    const first = await receiveHeartbeat(ctx, ids);
    const firstBeatMs = performance.now() - t;
    const beatCost = subtractCost(mark(), before);
    before = mark();
    // Every machine is allocatable once every bucket's walk has settled; the run goes on while the fleet summary
    // (a cascade of the walk's commits) catches up, which allocation does not wait for.
    const walking = walk(first.changedBuckets);
    // A walk that ends without settling them all is caught by the allocatable count below.
    const firstRosterMs = (await Promise.race([store.settled(first.changedBuckets), walking.then(() => performance.now())])) - t;
    await walking;
    const firstRosterDone = new Date();
    const firstRunMs = performance.now() - t;
    const firstRosterJit = compiling();
    const firstWalk = subtractCost(mark(), before);
    metering = 'all';
    const allocatable = await liveCount(ids);
    if (allocatable !== ids.length) throw new Error(`after the first roster ${allocatable} of ${ids.length} machines are allocatable`);
    const initialRoster = {
      beat_ms: round(firstBeatMs, 1),
      buckets_settled_ms: round(firstRosterMs, 1),
      summary_caught_up_ms: round(firstRunMs, 1),
      dynamodb_local_jit: firstRosterJit,
      buckets_changed: first.changedBuckets.length,
      beat: costView(beatCost),
      walk: costView(firstWalk),
      allocatable,
    };

    // ---- idle: the same roster every beat ----
    const beats = Math.floor(options.idleSimulatedSeconds / options.beatIntervalSeconds);
    progress(`heartbeat: ${beats} idle beats over ${options.idleSimulatedSeconds} simulated seconds`);
    before = mark();
    t = performance.now();
    let storedBeats = 0;
    let idleBucketChanges = 0;
    for (let beat = 0; beat < beats; beat++) {
      nowMs += options.beatIntervalSeconds * 1000;
      const result = await receiveHeartbeat(ctx, ids);
      if (result.stored) storedBeats++;
      idleBucketChanges += result.changedBuckets.length;
    }
    const idleWallMs = performance.now() - t;
    const idle = subtractCost(mark(), before);
    const simulatedSeconds = beats * options.beatIntervalSeconds;

    // ---- a changing roster: every beat some machines leave and those that left at the beat before come back ----
    progress(`heartbeat: ${options.changingBeats} beats, ${options.stopMachines} machines leaving at each`);
    const beatLatencies: number[] = [];
    const walkCost = zeroCost();
    let livenessChanges = 0;
    let away = new Set<string>();
    for (let beat = 0; beat < options.changingBeats; beat++) {
      const leaving = new Set(Array.from({ length: options.stopMachines }, (_, i) => ids[(beat * 7_919 + i * 104_729) % ids.length]!));
      nowMs += options.beatIntervalSeconds * 1000;
      t = performance.now();
      const result = await receiveHeartbeat(
        ctx,
        ids.filter((m) => !leaving.has(m)),
      );
      beatLatencies.push(performance.now() - t);
      const walked = mark();
      await walk(result.changedBuckets);
      addCost(walkCost, subtractCost(mark(), walked));
      livenessChanges += leaving.size + [...away].filter((m) => !leaving.has(m)).length - [...leaving].filter((m) => away.has(m)).length;
      away = leaving;
    }
    const latency = summarize(beatLatencies);

    const writesPerSecond = idle.writes / simulatedSeconds;
    const bulkUnitsPerChange = firstWalk.writeUnits / ids.length;
    progress('heartbeat: reading the stream for partition heat');
    const heat = await streamHeat(endpoint, tableName, { until: firstRosterDone, writeTimes });
    return {
      machines: ids.length,
      heartbeat_timeout: { unit: 's', value: options.timeoutSeconds },
      beat_interval: { unit: 's (simulated)', value: options.beatIntervalSeconds },
      refresh_every: { unit: 's (simulated): timeout / REFRESH_DIVISOR', value: options.timeoutSeconds / REFRESH_DIVISOR },
      goals: {
        beat_p99_ms: judged(latency.p99, heartbeatGoals.beatP99Ms, 'ms: the heartbeat request, under a changing roster'),
        beat_p50_ms: judged(latency.median, heartbeatGoals.beatP99Ms, 'ms: the heartbeat request, under a changing roster'),
        first_roster_to_allocatable_ms: judged(
          firstRosterMs,
          heartbeatGoals.firstRosterToAllocatableMs,
          'ms: first beat until every bucket walked (every machine allocatable; checked after ' +
            'the run); the fleet summary catching up is initial_roster.summary_caught_up_ms',
        ),
        write_units_per_liveness_change: judged(
          bulkUnitsPerChange,
          heartbeatGoals.writeUnitsPerLivenessChange,
          'write units per machine whose liveness changed: the first roster walk (machines and the buckets marked applied) / machines',
        ),
        idle_writes_per_second: judged(writesPerSecond, heartbeatGoals.idleWritesPerSecond, 'DynamoDB writes per simulated second, idle fleet', true),
        registration_ms: judged(registrationMs, heartbeatGoals.registrationMs, `ms: POST /admin/machines service call for ${ids.length} new machines`),
      },
      registration: {
        unit: 'writes = DynamoDB write requests (transactions count one), requests by command, wall in ms; capacity not metered (see CounterOptions.capacity)',
        ...registration,
      },
      initial_roster: {
        unit: 'writes = DynamoDB write requests, units = capacity units (write units only: reads are not metered while it runs), wall in ms',
        ...initialRoster,
      },
      idle: {
        unit: 'writes = DynamoDB write requests, units = capacity units, simulated time in s, wall in ms',
        simulated_seconds: simulatedSeconds,
        beats,
        beats_that_wrote: storedBeats,
        buckets_changed: idleBucketChanges,
        wall_ms: round(idleWallMs, 1),
        ...costView(idle),
        write_units_per_second: { unit: 'write capacity units per simulated second', value: round(idle.writeUnits / simulatedSeconds, 4) },
        read_units_per_second: { unit: 'read capacity units per simulated second', value: round(idle.readUnits / simulatedSeconds, 4) },
      },
      changing_roster: {
        unit: 'beat latency in ms (the request only); walk = what the stream reaction wrote for those beats',
        beats: options.changingBeats,
        leaving_per_beat: options.stopMachines,
        beat_latency: latency,
        liveness_changes: livenessChanges,
        walk: costView(walkCost),
        walk_write_units_per_liveness_change: {
          unit:
            'write units per change when few machines change: each walk marks its bucket (~2 KB) applied, and the fleet summary rewrites the changed ' +
            "machine's rack (~1.3 KB) and counter item (~2.3 KB at 10,000 machines in racks of 8: the counters of ~20 racks), each written in a transaction",
          value: round(walkCost.writeUnits / Math.max(1, livenessChanges), 3),
        },
      },
      partition_heat: {
        window: 'registration and the first roster with its walk, by wall clock (the beats after them run on a simulated clock, faster than time)',
        stream_records: heat.records,
        stream_records_unwatched: heat.unwatched,
        ...heatReport(heat.heat, ids.length),
      },
    };
  }
}
