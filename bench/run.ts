// `npm run bench`: create/release latency through the local HTTP API against the bare DynamoDB floor, what each
// operation consumes, what heartbeats cost an idle fleet of 10,000 machines, how fast a meta-instance gets a
// replacement (stream vs sweep alone), how long placement decisions take for 1,000 meta-instances on 10,000 machines,
// what the sweep reads in a 100,000-machine table against a full Scan, and how creates answer when far more of them
// than machines arrive at once. See bench/README.md.
// One JSON document on stdout (and in bench/results/latest.json); progress on stderr.
// Also: each synthesized Lambda bundle's cold start, a site-scale soak with its invariants, and what each workflow
// costs in DynamoDB requests and capacity units from its call until the site is quiet.
// BENCH_ONLY=meta,sweep (or BENCH_SKIP=api,heartbeat) picks the parts: api, host, heartbeat, meta, placement, sweep,
// contention, coldstart, scale, workflows.

import '#local/xray-manual-mode.ts';
import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseSiteConfig } from '#config/site-config.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from '#local/dynamodb-local.ts';
import type { AppContext } from '#services/context.ts';
import { inProcessBus } from '#services/events.ts';
import { randomIds } from '#services/lambda-context.ts';
import { prometheusMetrics } from '#services/prometheus-metrics.ts';
import { contentionBench, defaultContentionOptions } from './contention.ts';
import { API_MACHINES, API_SWEEP_INTERVAL_MS, apiSiteToml, MACHINE_TYPE, ORG, TENANT, startApiBench, type ApiBench, type ApiCycle, type OperationCost } from './api.ts';
import { startFloor, type Floor, type FloorCycle } from './floor.ts';
import { COLDSTART_GOAL_MS, coldstartBench, defaultColdstartOptions } from './coldstart.ts';
import { defaultHeartbeatOptions, heartbeatCost, standaloneContext } from './heartbeat.ts';
import { besideFloors, hostBench } from './host.ts';
import { metaHeal } from './meta-heal.ts';
import { defaultPlacementOptions, placementBench } from './placement.ts';
import { defaultScaleSoakOptions, scaleSoak } from './scale-soak.ts';
import { perOperation, ratio, round, summarize, type Cost } from './stats.ts';
import { defaultSweepReadsOptions, sweepReads } from './sweep-reads.ts';
import { defaultWorkflowCostOptions, workflowCost } from './workflow-cost.ts';
import { costEstimate } from './cost-model.ts';

const unitsOf = (workflow: { read_units_median: number; write_units_median: number }) => ({
  readUnits: workflow.read_units_median,
  writeUnits: workflow.write_units_median,
});

/** An integer from the environment, at least `min` (1 unless told), or the fallback. */
const envInt = (name: string, fallback: number, min = 1) => {
  const raw = process.env[name];
  const value = Number(raw);
  return raw !== undefined && raw.trim() !== '' && Number.isInteger(value) && value >= min ? value : fallback;
};

const PARTS = ['api', 'host', 'heartbeat', 'meta', 'placement', 'sweep', 'contention', 'coldstart', 'scale', 'workflows'] as const;
type Part = (typeof PARTS)[number];
const listed = (name: string) =>
  (process.env[name] ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
function selectedParts(): Set<Part> {
  const only = listed('BENCH_ONLY');
  const skip = listed('BENCH_SKIP');
  const unknown = [...only, ...skip].filter((p) => !(PARTS as readonly string[]).includes(p));
  if (unknown.length > 0) throw new Error(`unknown bench part(s) ${unknown.join(', ')}; known: ${PARTS.join(', ')}`);
  return new Set(PARTS.filter((p) => (only.length === 0 || only.includes(p)) && !skip.includes(p)));
}

/** Measured rounds (one create and one release each) on each side; API and floor rounds alternate. */
const SAMPLES = envInt('BENCH_SAMPLES', 200);
const API_WARMUP = envInt('BENCH_API_WARMUP', 20);
const FLOOR_WARMUP = envInt('BENCH_FLOOR_WARMUP', 60);
/** Idle pause before every timed call, API and floor alike (stats.ts settle). */
const SETTLE_MS = envInt('BENCH_SETTLE_MS', 10, 0);
const HEARTBEAT_MACHINES = envInt('BENCH_HEARTBEAT_MACHINES', defaultHeartbeatOptions.machines);
/** Medians per consecutive slice of the run, to show drift. */
const SLICES = 4;
const META = {
  trials: envInt('BENCH_META_TRIALS', 20),
  warmupTrials: envInt('BENCH_META_WARMUP', 2, 0),
  heartbeatTrials: envInt('BENCH_META_HEARTBEAT_TRIALS', 6, 0),
  sweepProbes: envInt('BENCH_META_SWEEP_PROBES', 1, 0),
  probeIntervals: envInt('BENCH_META_PROBE_INTERVALS', 3),
  sweepIntervalMs: envInt('BENCH_META_SWEEP_INTERVAL_MS', 5_000),
  pollMs: envInt('BENCH_META_POLL_MS', 10),
};
const PLACEMENT = {
  ...defaultPlacementOptions,
  machines: envInt('BENCH_PLACEMENT_MACHINES', defaultPlacementOptions.machines),
  metaInstances: envInt('BENCH_PLACEMENT_META_INSTANCES', defaultPlacementOptions.metaInstances),
  passes: envInt('BENCH_PLACEMENT_PASSES', defaultPlacementOptions.passes),
};
const SWEEP = {
  ...defaultSweepReadsOptions,
  machines: envInt('BENCH_SWEEP_MACHINES', defaultSweepReadsOptions.machines),
  loadConcurrency: envInt('BENCH_SWEEP_LOAD_CONCURRENCY', defaultSweepReadsOptions.loadConcurrency),
  runBudgetMs: envInt('BENCH_SWEEP_RUN_BUDGET_MS', defaultSweepReadsOptions.runBudgetMs),
  agentDeleteMs: envInt('BENCH_SWEEP_AGENT_DELETE_MS', defaultSweepReadsOptions.agentDeleteMs, 0),
};
const CONTENTION = {
  machines: envInt('BENCH_CONTENTION_MACHINES', defaultContentionOptions.machines),
  requests: envInt('BENCH_CONTENTION_REQUESTS', defaultContentionOptions.requests),
  rounds: envInt('BENCH_CONTENTION_BURSTS', defaultContentionOptions.rounds),
  warmupRounds: envInt('BENCH_CONTENTION_WARMUP_BURSTS', defaultContentionOptions.warmupRounds, 0),
  containerRounds: envInt('BENCH_CONTENTION_CONTAINER_BURSTS', defaultContentionOptions.containerRounds, 0),
};
const COLDSTART = { runs: envInt('BENCH_COLDSTART_RUNS', defaultColdstartOptions.runs) };
const SCALE = {
  machines: envInt('BENCH_SCALE_MACHINES', defaultScaleSoakOptions.machines),
  instances: envInt('BENCH_SCALE_INSTANCES', defaultScaleSoakOptions.instances, 0),
  metaInstances: envInt('BENCH_SCALE_META_INSTANCES', defaultScaleSoakOptions.metaInstances),
  churnSeconds: envInt('BENCH_SCALE_CHURN_S', defaultScaleSoakOptions.churnSeconds),
  failurePercent: envInt('BENCH_SCALE_FAILURE_PERCENT', defaultScaleSoakOptions.failurePercent),
  apiWorkers: envInt('BENCH_SCALE_API_WORKERS', defaultScaleSoakOptions.apiWorkers),
  sweepIntervalMs: envInt('BENCH_SCALE_SWEEP_INTERVAL_MS', defaultScaleSoakOptions.sweepIntervalMs),
  heartbeatIntervalSeconds: envInt('BENCH_SCALE_HEARTBEAT_INTERVAL_S', defaultScaleSoakOptions.heartbeatIntervalSeconds),
  heartbeatTimeoutSeconds: envInt('BENCH_SCALE_HEARTBEAT_TIMEOUT_S', defaultScaleSoakOptions.heartbeatTimeoutSeconds),
};

const WORKFLOWS = {
  trials: envInt('BENCH_WORKFLOW_TRIALS', defaultWorkflowCostOptions.trials),
  warmup: envInt('BENCH_WORKFLOW_WARMUP', defaultWorkflowCostOptions.warmup, 0),
  sweepIntervalMs: envInt('BENCH_WORKFLOW_SWEEP_INTERVAL_MS', defaultWorkflowCostOptions.sweepIntervalMs),
  quietMs: envInt('BENCH_WORKFLOW_QUIET_MS', defaultWorkflowCostOptions.quietMs),
};

const progress = (line: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

let dynamo: DynamoDbLocal | undefined;
let api: ApiBench | undefined;
let floor: Floor | undefined;

async function cleanup(): Promise<void> {
  await api?.stop().catch((error: unknown) => progress(`stopping the site failed: ${String(error)}`));
  api = undefined;
  await floor?.stop().catch(() => {});
  floor = undefined;
  await dynamo?.stop().catch((error: unknown) => progress(`stopping DynamoDB Local failed: ${String(error)}`));
  dynamo = undefined;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    progress(`${signal}: stopping`);
    void cleanup().finally(() => process.exit(130));
  });
}

/** Is the DynamoDB Local java process on our port still there? (Other runs on the host may have their own.) */
function dynamoLeft(port: number): boolean {
  try {
    return execFileSync('pgrep', ['-f', `DynamoDBLocal.jar -port ${port} `], { encoding: 'utf8' }).trim() !== '';
  } catch {
    return false;
  }
}

/** Which code was measured: the commit and how many files differ from it. */
function gitState(): { commit: string; changed_files: number } | null {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return { commit: git('rev-parse', '--short', 'HEAD').trim(), changed_files: git('status', '--porcelain').split('\n').filter((l) => l.trim() !== '').length };
  } catch {
    return null;
  }
}

const load = () => loadavg().map((x) => round(x, 2));

const sameCost = (a: Cost, b: Cost) =>
  a.writes === b.writes &&
  round(a.writeUnits) === round(b.writeUnits) &&
  round(a.readUnits) === round(b.readUnits) &&
  JSON.stringify(Object.entries(a.requests).sort()) === JSON.stringify(Object.entries(b.requests).sort());

/** The brief's figure (meter deltas over the call, divided by the count) next to the attributed one. */
function meterWindow(ops: OperationCost[]) {
  const window = perOperation(ops.map((o) => o.meterWindow));
  return {
    unit: 'the store client\'s metered deltas (bench/counter.ts) over each call, divided by the count; per operation',
    write_units_per_op: window.write_units_per_op.value,
    writes_per_op: window.writes_per_op.value,
    read_units_per_op: window.read_units_per_op.value,
    calls_where_other_site_work_overlapped: ops.filter((o) => !sameCost(o.attributed, o.meterWindow)).length,
  };
}

function slices(apiCycles: ApiCycle[], floorCycles: FloorCycle[]) {
  const size = Math.ceil(apiCycles.length / SLICES);
  const out = [];
  for (let start = 0; start < apiCycles.length; start += size) {
    const a = apiCycles.slice(start, start + size);
    const f = floorCycles.slice(start, start + size);
    out.push({
      rounds: a.length,
      api_create: summarize(a.map((c) => c.createMs)).median,
      floor_create: summarize(f.map((c) => c.createMs)).median,
      api_release: summarize(a.map((c) => c.releaseMs)).median,
      floor_release: summarize(f.map((c) => c.releaseMs)).median,
    });
  }
  return out;
}

/**
 * A DynamoDB Local of the part's own, stopped afterwards (and by cleanup() on a failure); its port is remembered.
 * A part that starts a site after a site on it has the stream log indexed, so that no site pays for the streams of
 * those before it (local/dynamodb-local.ts).
 */
const ports: number[] = [];
async function withDynamo<T>(what: string, run: (local: DynamoDbLocal) => Promise<T>, options: { sitesOneAfterAnother?: boolean } = {}): Promise<T> {
  dynamo = await startDynamoDbLocal({ indexStreamLog: options.sitesOneAfterAnother ?? false });
  ports.push(dynamo.port);
  progress(`DynamoDB Local for ${what} on ${dynamo.endpoint}`);
  try {
    return await run(dynamo);
  } finally {
    // Whatever still talks to this DynamoDB Local goes first (the API part's site and floor, after a failure).
    await cleanup();
  }
}

async function apiPart(id: string) {
  return withDynamo('the API site and the floor', async ({ endpoint }) => {
    // ---- API site ----
    api = await startApiBench(endpoint, id, SETTLE_MS, progress);
    progress(`site on ${api.site.url} with ${API_MACHINES} ${MACHINE_TYPE} machines; warming up (${API_WARMUP} create/release rounds)`);
    for (let i = 0; i < API_WARMUP; i++) await api.cycle();

    // ---- floor, seeded from the warmed-up site's own items ----
    floor = await startFloor({ endpoint, id, siteTable: api.tableName, machineType: MACHINE_TYPE, org: ORG, actor: TENANT, settleMs: SETTLE_MS });
    progress(`floor table ${floor.tableName} seeded with ${floor.seeded.machines} machines; warming up (${FLOOR_WARMUP} rounds)`);
    for (let i = 0; i < FLOOR_WARMUP; i++) await floor.cycle();

    // ---- measured: API and floor rounds alternate, so load from elsewhere on the host falls on both alike; which
    // of the two goes first in a pair is drawn at random, so neither always follows the other ----
    const apiCycles: ApiCycle[] = [];
    const floorCycles: FloorCycle[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      if (Math.random() < 0.5) {
        apiCycles.push(await api.cycle());
        floorCycles.push(await floor.cycle());
      } else {
        floorCycles.push(await floor.cycle());
        apiCycles.push(await api.cycle());
      }
      if ((i + 1) % 50 === 0 || i + 1 === SAMPLES) {
        const a = apiCycles.slice(-50);
        const f = floorCycles.slice(-50);
        progress(
          `${i + 1}/${SAMPLES} rounds; last ${a.length} medians: create ${summarize(a.map((c) => c.createMs)).median} ms (floor ${summarize(f.map((c) => c.createMs)).median}), ` +
            `release ${summarize(a.map((c) => c.releaseMs)).median} ms (floor ${summarize(f.map((c) => c.releaseMs)).median})`,
        );
      }
    }
    const siteContext = api.site.ctx;
    await api.stop();
    api = undefined;
    await floor.stop();
    floor = undefined;
    return { apiCycles, floorCycles, siteContext };
  });
}

function apiReport(apiCycles: ApiCycle[], floorCycles: FloorCycle[]) {
  const apiCreate = summarize(apiCycles.map((c) => c.createMs));
  const apiRelease = summarize(apiCycles.map((c) => c.releaseMs));
  const floorCreate = summarize(floorCycles.map((c) => c.createMs));
  const floorRelease = summarize(floorCycles.map((c) => c.releaseMs));
  const ratioUnit = 'ratio (API latency / contract floor latency)';
  const ratios = {
    unit: ratioUnit,
    create_median: ratio(apiCreate.median, floorCreate.median),
    create_p99: ratio(apiCreate.p99, floorCreate.p99),
    release_median: ratio(apiRelease.median, floorRelease.median),
    release_p99: ratio(apiRelease.p99, floorRelease.p99),
  };
  /** Median of the per-pair ratios (each API round against the floor round next to it): robust to slow drift. */
  const paired = (pick: (c: ApiCycle | FloorCycle) => number) =>
    summarize(apiCycles.map((a, i) => pick(a) / pick(floorCycles[i]!))).median;
  const creates = apiCycles.map((c) => c.create);
  const releases = apiCycles.map((c) => c.release);
  return {
    config: {
      samples: { api_rounds: apiCycles.length, floor_rounds: floorCycles.length, note: 'one round = one create and one release' },
      warmup_rounds: { api: API_WARMUP, floor: FLOOR_WARMUP },
      settle_ms: SETTLE_MS,
      api_site: {
        machines: API_MACHINES,
        machine_type: MACHINE_TYPE,
        sweep_interval_ms: API_SWEEP_INTERVAL_MS,
        toml: apiSiteToml.trim().split('\n'),
        method:
          'sequential rounds: POST create (timed until the response body is read), wait until the instance is Ready and the site is quiet, DELETE (timed), wait until the machine is Ready again and the site is quiet; fetch with keep-alive to the local HTTP server in the same process; API and floor rounds alternate in pairs, in random order within a pair; every timed call, API or floor, follows the same idle pause (settle_ms)',
        cost_attribution:
          'DynamoDB requests are attributed to an API call through its async context (tagged when the local server verifies the bench token), with the capacity DynamoDB reports per response; meter_window shows the brief\'s meter deltas over the same calls for comparison',
      },
      floor: {
        what: 'the contract floor: the least DynamoDB work each operation can do by what it promises (bench/floor.ts)',
        table: "scratch table from tableDefinition(), seeded with the site's catalog and heartbeat items and its free machines",
        create: 'Query allocatable (Limit 1) + TransactWriteItems [machine Put guarded by version, instance Put, history Put]',
        release: 'GetItem instance (consistent) + TransactWriteItems [instance Put guarded by version, machine Put guarded by version, history Put]',
        items: "the domain's own decisions (assignInstance, releaseInstance) written by the store's writesOf: the bytes and conditions the service writes",
        untimed: "between the timed calls the store commits what the site's reactions would: the create claimed and Ready, after the release the cleanup finished",
      },
    },
    ratios,
    create: {
      api: apiCreate,
      floor: floorCreate,
      ratio: { unit: ratioUnit, median: ratios.create_median, p99: ratios.create_p99, median_of_paired_ratios: paired((c) => c.createMs) },
      api_cost: perOperation(creates.map((o) => o.attributed)),
      api_cost_meter_window: meterWindow(creates),
      floor_cost: perOperation(floorCycles.map((c) => c.createCost)),
    },
    release: {
      api: apiRelease,
      floor: floorRelease,
      ratio: { unit: ratioUnit, median: ratios.release_median, p99: ratios.release_p99, median_of_paired_ratios: paired((c) => c.releaseMs) },
      api_cost: perOperation(releases.map((o) => o.attributed)),
      api_cost_meter_window: meterWindow(releases),
      floor_cost: perOperation(floorCycles.map((c) => c.releaseCost)),
    },
    drift: { unit: 'ms, medians of consecutive quarters of the measured rounds', slices: slices(apiCycles, floorCycles) },
  };
}

async function main() {
  const started = performance.now();
  const loadAtStart = load();
  const id = randomUUID().slice(0, 8);
  const parts = selectedParts();
  progress(`node ${process.version}, ${cpus().length} cores, load ${loadAtStart.join(' ')}; parts: ${[...parts].join(', ') || 'none'}`);
  const wall: Record<string, number> = {};
  /** Parts that failed, with why: the others' figures are still written, and the run exits non-zero. */
  const failed: Record<string, string> = {};
  const timed = async <T>(part: Part, run: () => Promise<T> | T): Promise<T | undefined> => {
    if (!parts.has(part)) return undefined;
    const t = performance.now();
    try {
      return await run();
    } catch (error) {
      failed[part] = error instanceof Error ? error.message.split('\n')[0]! : String(error);
      progress(`${part} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      return undefined;
    } finally {
      wall[part] = round((performance.now() - t) / 1000, 1);
    }
  };

  // ---- create/release through the API against the floor ----
  const apiRun = await timed('api', () => {
    progress(`api: ${SAMPLES} rounds per side`);
    return apiPart(id);
  });

  // ---- what this host gives the timed goals: DynamoDB Local's floors for the heartbeat part's fleet, Node's speed ----
  const host = await timed('host', () => withDynamo('the host\'s floors', ({ endpoint, javaPid }) => hostBench(endpoint, id, { machines: HEARTBEAT_MACHINES }, progress, javaPid)));

  // ---- heartbeats of an idle 10,000-machine fleet, on a DynamoDB Local of their own: the one the site ran on
  // has become markedly slower to write by then (about twice, measured), and 10,000 registrations and the first
  // roster are long enough as it is ----
  const heartbeat = await timed('heartbeat', () =>
    withDynamo('the heartbeat fleet', ({ endpoint, javaPid }) =>
      heartbeatCost(endpoint, id, { ...defaultHeartbeatOptions, machines: HEARTBEAT_MACHINES }, apiRun?.siteContext ?? standaloneContext(), progress, javaPid),
    ),
  );

  // ---- issue 4, 7a: failure to replacement Ready, stream vs sweep alone (both sites on one DynamoDB Local) ----
  const meta = await timed('meta', () => withDynamo('the meta-instance sites', ({ endpoint }) => metaHeal(endpoint, id, META, progress), { sitesOneAfterAnother: true }));

  // ---- issue 4, 7b: placement decisions, pure domain ----
  const placement = await timed('placement', () => {
    progress(`placement: ${PLACEMENT.metaInstances} meta-instances on ${PLACEMENT.machines} machines, pure domain`);
    return placementBench(PLACEMENT);
  });

  // ---- issue 7, 5: the sweep's reads in a 100,000-machine table vs a full Scan, on a DynamoDB Local of its own ----
  const sweep = await timed('sweep', () => withDynamo('the sweep-reads table', ({ endpoint }) => sweepReads(endpoint, id, SWEEP, progress)));

  // ---- issue 11, 4: bursts of concurrent creates for one machine type, far more than there are machines ----
  const contention = await timed('contention', () => withDynamo('the contention sites', (local) => contentionBench(local, id, CONTENTION, progress), { sitesOneAfterAnother: true }));
  // ---- issue 11, 9: every synthesized bundle imported and invoked once in a fresh process ----
  const coldstart = await timed('coldstart', () => withDynamo('the cold starts', ({ endpoint }) => coldstartBench(endpoint, id, COLDSTART, progress)));

  // ---- issue 11, 10: the site-scale soak ----
  const scale = await timed('scale', () => withDynamo('the scale soak', ({ endpoint }) => scaleSoak(endpoint, id, SCALE, progress)));

  // ---- issue 11, 8: DynamoDB requests and capacity per workflow, call until quiet ----
  const workflows = await timed('workflows', () => withDynamo('the workflow-cost site', ({ endpoint }) => workflowCost(endpoint, id, WORKFLOWS, progress)));

  const javaLeft = ports.some(dynamoLeft);
  const cpuList = cpus();
  const apiSection = apiRun ? apiReport(apiRun.apiCycles, apiRun.floorCycles) : undefined;
  const report = {
    bench: 'fleetward control plane',
    date: new Date().toISOString(),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    machine: {
      cores: cpuList.length,
      cpu_model: cpuList[0]?.model ?? 'unknown',
      memory_gib: round(totalmem() / 2 ** 30, 1),
      load_average_1_5_15min: { unit: 'runnable processes; other work on the host skews latency', at_start: loadAtStart, at_end: load() },
    },
    code: gitState(),
    parts: { ran: [...parts], skipped: PARTS.filter((p) => !parts.has(p)), choose_with: 'BENCH_ONLY=meta,sweep or BENCH_SKIP=api,heartbeat' },
    wall_time: { unit: 's', total: round((performance.now() - started) / 1000, 1), ...wall },
    summary: {
      ...(apiSection ? { api_over_floor: { unit: 'ratio (API latency / contract floor latency), medians', create: apiSection.ratios.create_median, release: apiSection.ratios.release_median } } : {}),
      ...(host ? { host: { node_loop_ms: host.node_loop.value, ...host.dynamodb_local_floors } } : {}),
      ...(heartbeat ? { heartbeat: host?.machines === heartbeat.machines ? besideFloors(heartbeat.goals, host) : heartbeat.goals } : {}),
      ...(meta
        ? {
            meta_replacement: {
              unit: 'ms from a backing machine\'s failure until a different member is Ready (median of the trials); ratio sweep-only / stream',
              stream_override_median: meta.stream.override.median,
              stream_override_p90: meta.stream.override.p90,
              stream_override_max: meta.stream.override.max,
              stream_override_trials: meta.stream.override.trials,
              sweep_only_override:
                meta.sweep_only.override.trials === 0
                  ? 'not run'
                  : meta.sweep_only.override.replaced === 0
                  ? `never replaced within ${meta.sweep_only.override.wait_per_trial.value} ms (${meta.sweep_only.override.trials} trial(s))` : meta.sweep_only.override.median,
              ratio_override: meta.ratios.override ?? meta.ratios.override_lower_bound,
              ...('heartbeat' in meta.stream && meta.stream.heartbeat && 'heartbeat' in meta.sweep_only && meta.sweep_only.heartbeat
                ? { stream_heartbeat_median: meta.stream.heartbeat.median, sweep_only_heartbeat_median: meta.sweep_only.heartbeat.median, ratio_heartbeat: meta.ratios.heartbeat }
                : {}),
              sweep_interval_s: meta.config.sweep_interval.local,
            },
          }
        : {}),
      ...(placement
        ? {
            placement: {
              unit: 'ms for all decisions (median pass), µs per decision',
              meta_instances: placement.config.meta_instances,
              machines: placement.config.machines,
              total_ms: placement.candidates_as_the_service_loads_them.total.median,
              per_decision_median_us: placement.candidates_as_the_service_loads_them.per_decision.median,
              per_decision_p99_us: placement.candidates_as_the_service_loads_them.per_decision.p99,
              placed: placement.candidates_as_the_service_loads_them.outcomes.placed,
              errors: placement.candidates_as_the_service_loads_them.outcomes.errors,
              false_placement_errors: placement.goals.false_placement_errors,
              all_decisions_goal: placement.goals.all_decisions_ms,
              false_placement_errors_first_page_only: placement.candidates_first_page_only.outcomes.false_placement_errors,
              share_of_a_60s_sweep: { unit: 'ratio (all decisions / 60 s)', value: round(placement.candidates_as_the_service_loads_them.total.median / 60_000, 5) },
            },
          }
        : {}),
      ...(sweep
        ? {
            sweep_reads: {
              unit: 'read capacity units; ratio full Scan / sweep',
              machines: sweep.config.machines,
              sweep_read_units: sweep.sweep.read_units,
              sweep_items_read: sweep.sweep.items_read,
              scan_read_units: sweep.scan.read_units,
              scan_items: sweep.scan.items,
              ratio_scan_over_sweep: sweep.ratios.scan_over_sweep,
              clear_1000_due: { ms: sweep.clear_backlog.ms, runs: sweep.clear_backlog.runs, reconciled: sweep.clear_backlog.reconciled, failed: sweep.clear_backlog.failed, goal: sweep.clear_backlog.goal },
              load_s: sweep.load.value,
            },
          }
        : {}),
      ...(contention
        ? {
            create_contention: {
              unit: 'ms (p50, p99 of every create answer); answers by outcome',
              machines: contention.config.machines,
              requests_per_burst: contention.config.requests_per_burst,
              bursts: contention.config.bursts,
              p50_ms: contention.latency.all.median,
              p99_ms: contention.latency.all.p99,
              goal_p99_ms: contention.goal.goal,
              ratio_p99_over_goal: contention.goal.ratio,
              outcomes: contention.outcomes,
              dynamodb_requests_per_create: contention.dynamodb_requests_per_create.value,
              no_machine_twice: contention.no_machine_twice,
              warmup: contention.warmup
                ? { p50_ms: contention.warmup.latency.all.median, p99_ms: contention.warmup.latency.all.p99, no_machine_twice: contention.warmup.no_machine_twice }
                : 'not run',
              container_per_request: contention.container_per_request
                ? {
                    p50_ms: contention.container_per_request.latency.all.median,
                    p99_ms: contention.container_per_request.latency.all.p99,
                    dynamodb_requests_per_create: contention.container_per_request.dynamodb_requests_per_create.value,
                    no_machine_twice: contention.container_per_request.no_machine_twice,
                    answered_5xx: contention.container_per_request.answered_5xx,
                  }
                : 'not run',
            },
          }
        : {}),
      ...(coldstart
        ? {
            coldstart: {
              unit: 'ms, import + first invoke in a fresh process (median); goal and ratio median / goal; ratio_to_floor median / the bare-SDK floor\'s',
              goal_ms: COLDSTART_GOAL_MS,
              floor_median: coldstart.floor.import_and_first_invoke.median,
              ...Object.fromEntries(Object.entries(coldstart.functions).map(([name, figures]) => [name, { median: figures.import_and_first_invoke.median, ratio: figures.import_and_first_invoke.ratio_to_goal, ratio_to_floor: figures.ratio_to_floor, cpu_median: figures.cpu.import_and_first_invoke.median, bundle_kib: figures.bundle_kib }])),
            },
          }
        : {}),
      ...(scale
        ? {
            scale_soak: {
              unit: 'ms (API latency, reconcile lag medians); capacity units per minute',
              machines: scale.config.machines,
              instances: scale.config.instances,
              meta_instances: scale.config.metaInstances,
              churn_s: scale.churn_s,
              api_p50: scale.api.all.median,
              api_p99: scale.api.all.p99,
              create_to_ready_median: scale.reconcile_lag.create_to_ready.median,
              failure_to_replacement_ready_median: scale.reconcile_lag.failure_to_replacement_ready.all?.median ?? null,
              read_units_per_minute: scale.dynamodb_per_minute.read_units,
              write_units_per_minute: scale.dynamodb_per_minute.write_units,
              failures_replaced: `${scale.failures.replaced}/${scale.failures.injected}`,
              invariants_hold: scale.invariants.ok,
            },
          }
        : {}),
      ...(workflows && heartbeat && sweep
        ? {
            monthly_cost: costEstimate({
              createToReady: unitsOf(workflows.summary.create_to_ready),
              releaseToClean: unitsOf(workflows.summary.release_to_clean),
              memberReplacement: unitsOf(workflows.summary.member_replacement),
              idleWritesPerSecond: heartbeat.goals.idle_writes_per_second.value,
              sweepReadUnits: sweep.sweep.read_units,
            }),
          }
        : {}),
      ...(workflows
        ? {
            workflow_cost: {
              unit: 'DynamoDB requests per workflow, call until quiet (median of the trials); goal = half of the figure before the reconciler registry; ratio median / goal; capacity units have no baseline',
              ...workflows.summary,
            },
          }
        : {}),
    },
    ...(apiSection ? { config: apiSection.config, ratios: apiSection.ratios, create: apiSection.create, release: apiSection.release, drift: apiSection.drift } : {}),
    ...(host ? { host } : {}),
    ...(heartbeat ? { heartbeat } : {}),
    ...(meta ? { meta_instance_replacement: meta } : {}),
    ...(placement ? { placement } : {}),
    ...(sweep ? { sweep_reads: sweep } : {}),
    ...(contention ? { create_contention: contention } : {}),
    ...(coldstart ? { coldstart } : {}),
    ...(scale ? { scale_soak: scale } : {}),
    ...(workflows ? { workflow_cost: workflows } : {}),
    ...(Object.keys(failed).length > 0 ? { failed_parts: failed } : {}),
    dynamodb_local_left_running: javaLeft,
  };

  const json = JSON.stringify(report, null, 2);
  // A run of some parts only does not replace the last full run's figures.
  const file = parts.size === PARTS.length ? 'latest.json' : `partial-${[...parts].join('-') || 'none'}.json`;
  const out = join(dirname(fileURLToPath(import.meta.url)), 'results', file);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${json}\n`);
  process.stdout.write(`${json}\n`);
  progress(`done in ${report.wall_time.total} s; written to ${out}`);
  if (Object.keys(failed).length > 0) throw new Error(`parts failed: ${Object.keys(failed).join(', ')} (their figures are left out)`);
  if (javaLeft) throw new Error(`a DynamoDB Local of ours (port ${ports.join(', ')}) is still running`);
  if (scale && !scale.invariants.ok) throw new Error(`scale soak: invariants broken: ${JSON.stringify(scale.invariants)}`);
}

try {
  await main();
} catch (error) {
  progress(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  await cleanup();
  process.exitCode = 1;
}
// Sockets kept alive by fetch or the SDK must not hold the process open once everything is stopped.
process.exit();
