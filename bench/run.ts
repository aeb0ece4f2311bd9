// `npm run bench`: create/release latency through the local HTTP API against the bare DynamoDB floor, what each
// operation consumes, and what heartbeats cost an idle fleet of 10,000 machines.
// One JSON document on stdout (and in bench/results/latest.json); progress on stderr.

import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDynamoDbLocal, type DynamoDbLocal } from '#local/dynamodb-local.ts';
import { API_MACHINES, API_SWEEP_INTERVAL_MS, apiSiteToml, MACHINE_TYPE, ORG, startApiBench, type ApiBench, type ApiCycle, type OperationCost } from './api.ts';
import { startFloor, type Floor, type FloorCycle } from './floor.ts';
import { defaultHeartbeatOptions, heartbeatCost } from './heartbeat.ts';
import { perOperation, ratio, round, SETTLE_MS, summarize, type Cost } from './stats.ts';

const envInt = (name: string, fallback: number) => {
  const value = Number(process.env[name]);
  return Number.isInteger(value) && value > 0 ? value : fallback;
};

/** Measured rounds (one create and one release each) on each side; API and floor rounds alternate. */
const SAMPLES = envInt('BENCH_SAMPLES', 200);
const API_WARMUP = envInt('BENCH_API_WARMUP', 20);
const FLOOR_WARMUP = envInt('BENCH_FLOOR_WARMUP', 60);
const HEARTBEAT_MACHINES = envInt('BENCH_HEARTBEAT_MACHINES', defaultHeartbeatOptions.machines);
/** Medians per consecutive slice of the run, to show drift. */
const SLICES = 4;

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
    unit: 'site.ctx.store.meter deltas over each call, divided by the count; per operation',
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

async function main() {
  const started = performance.now();
  const loadAtStart = load();
  const id = randomUUID().slice(0, 8);
  progress(`node ${process.version}, ${cpus().length} cores, load ${loadAtStart.join(' ')}; ${SAMPLES} rounds per side`);

  dynamo = await startDynamoDbLocal();
  const port = dynamo.port;
  progress(`DynamoDB Local on ${dynamo.endpoint}`);

  // ---- API site ----
  api = await startApiBench(dynamo.endpoint, id, progress);
  progress(`site on ${api.site.url} with ${API_MACHINES} ${MACHINE_TYPE} machines; warming up (${API_WARMUP} create/release rounds)`);
  for (let i = 0; i < API_WARMUP; i++) await api.cycle();

  // ---- floor, seeded from the warmed-up site's own items ----
  floor = await startFloor(dynamo.endpoint, id, api.tableName, MACHINE_TYPE, ORG);
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
  const apiPhaseS = (performance.now() - started) / 1000;

  const siteContext = api.site.ctx;
  await api.stop();
  api = undefined;
  await floor.stop();
  floor = undefined;
  await dynamo.stop();
  dynamo = undefined;

  // ---- heartbeats of an idle 10,000-machine fleet, on a DynamoDB Local of their own: the one the site ran on
  // has become markedly slower to write by then (about twice, measured), and 10,000 registrations and the first
  // roster are long enough as it is ----
  const heartbeatStarted = performance.now();
  dynamo = await startDynamoDbLocal();
  const heartbeatPort = dynamo.port;
  progress(`DynamoDB Local for the heartbeat fleet on ${dynamo.endpoint}`);
  const heartbeat = await heartbeatCost(dynamo.endpoint, id, { ...defaultHeartbeatOptions, machines: HEARTBEAT_MACHINES }, siteContext, progress);
  await dynamo.stop();
  dynamo = undefined;
  const heartbeatPhaseS = (performance.now() - heartbeatStarted) / 1000;
  const javaLeft = dynamoLeft(port) || dynamoLeft(heartbeatPort);

  const apiCreate = summarize(apiCycles.map((c) => c.createMs));
  const apiRelease = summarize(apiCycles.map((c) => c.releaseMs));
  const floorCreate = summarize(floorCycles.map((c) => c.createMs));
  const floorRelease = summarize(floorCycles.map((c) => c.releaseMs));
  const ratioUnit = 'ratio (API latency / floor latency)';
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

  const cpuList = cpus();
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
    wall_time: { unit: 's', total: round((performance.now() - started) / 1000, 1), api_and_floor: round(apiPhaseS, 1), heartbeat: round(heartbeatPhaseS, 1) },
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
        table: "scratch table from tableDefinition(), seeded with copies of the site's catalog, heartbeat and machine items",
        create: 'GetItem catalog + GetItem site heartbeat + Query allocatable (Limit 100) + TransactWriteItems [conditional machine Put, instance Put, history Put]',
        release: 'GetItem instance + GetItem machine + TransactWriteItems [conditional instance Put, conditional machine Put, history Put]',
        untimed: 'between the timed calls the floor puts the instance Ready and, after the release, the machine back to Ready, as the site\'s reactions would',
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
    heartbeat,
    dynamodb_local_left_running: javaLeft,
  };

  const json = JSON.stringify(report, null, 2);
  const out = join(dirname(fileURLToPath(import.meta.url)), 'results', 'latest.json');
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${json}\n`);
  process.stdout.write(`${json}\n`);
  progress(`done in ${report.wall_time.total} s; written to ${out}`);
  if (javaLeft) throw new Error(`a DynamoDB Local of ours (port ${port} or ${heartbeatPort}) is still running`);
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
