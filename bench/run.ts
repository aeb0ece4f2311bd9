// `npm run bench`: create/release latency through the local HTTP API against the bare DynamoDB floor, the
// capacity each operation consumes, and what heartbeats cost an idle fleet of 10,000 machines.
// One JSON document on stdout (and in bench/results/latest.json); progress on stderr.

import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDynamoDbLocal, type DynamoDbLocal } from '#local/dynamodb-local.ts';
import { API_MACHINES, API_SWEEP_INTERVAL_MS, apiSiteToml, MACHINE_TYPE, ORG, startApiBench, type ApiBench, type ApiCycle } from './api.ts';
import { startFloor, type Floor, type FloorCycle } from './floor.ts';
import { defaultHeartbeatOptions, heartbeatCost } from './heartbeat.ts';
import { perOperation, ratio, round, summarize } from './stats.ts';

const envInt = (name: string, fallback: number) => {
  const value = Number(process.env[name]);
  return Number.isInteger(value) && value > 0 ? value : fallback;
};

/** Measured samples per operation (each side), and how they are split into interleaved API / floor blocks. */
const SAMPLES = envInt('BENCH_SAMPLES', 240);
const BLOCKS = envInt('BENCH_BLOCKS', 4);
const API_WARMUP = envInt('BENCH_API_WARMUP', 30);
const FLOOR_WARMUP = envInt('BENCH_FLOOR_WARMUP', 60);
const HEARTBEAT_MACHINES = envInt('BENCH_HEARTBEAT_MACHINES', defaultHeartbeatOptions.machines);

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
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    progress(`${signal}: stopping`);
    void cleanup().finally(() => process.exit(130));
  });
}

/** Is a DynamoDB Local java process on our port still there? (`pgrep -f` as the brief checks it.) */
function dynamoLeft(port: number): boolean {
  try {
    return execFileSync('pgrep', ['-f', `DynamoDBLocal.jar -port ${port} `], { encoding: 'utf8' }).trim() !== '';
  } catch {
    return false;
  }
}

async function main() {
  const started = performance.now();
  const id = randomUUID().slice(0, 8);
  progress(`node ${process.version}, ${cpus().length} cores; ${SAMPLES} samples per operation in ${BLOCKS} blocks`);

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

  // ---- measured, API and floor blocks interleaved so drift in the JVM or the host hits both alike ----
  const apiCycles: ApiCycle[] = [];
  const floorCycles: FloorCycle[] = [];
  const perBlock = Math.ceil(SAMPLES / BLOCKS);
  const blocks: Array<{ api_create_median_ms: number; floor_create_median_ms: number; api_release_median_ms: number; floor_release_median_ms: number }> = [];
  for (let block = 0; block < BLOCKS; block++) {
    const n = Math.min(perBlock, SAMPLES - block * perBlock);
    if (n <= 0) break;
    const a: ApiCycle[] = [];
    const f: FloorCycle[] = [];
    for (let i = 0; i < n; i++) a.push(await api.cycle());
    for (let i = 0; i < n; i++) f.push(await floor.cycle());
    apiCycles.push(...a);
    floorCycles.push(...f);
    blocks.push({
      api_create_median_ms: summarize(a.map((c) => c.createMs)).median,
      floor_create_median_ms: summarize(f.map((c) => c.createMs)).median,
      api_release_median_ms: summarize(a.map((c) => c.releaseMs)).median,
      floor_release_median_ms: summarize(f.map((c) => c.releaseMs)).median,
    });
    progress(`block ${block + 1}/${BLOCKS}: ${n} API rounds, ${n} floor rounds; ${JSON.stringify(blocks.at(-1))}`);
  }
  const apiPhaseS = (performance.now() - started) / 1000;

  await api.stop();
  api = undefined;
  await floor.stop();
  floor = undefined;

  // ---- heartbeats of an idle 10,000-machine fleet ----
  const heartbeat = await heartbeatCost(dynamo.endpoint, id, { ...defaultHeartbeatOptions, machines: HEARTBEAT_MACHINES }, progress);

  await dynamo.stop();
  dynamo = undefined;
  const javaLeft = dynamoLeft(port);

  const apiCreate = summarize(apiCycles.map((c) => c.createMs));
  const apiRelease = summarize(apiCycles.map((c) => c.releaseMs));
  const floorCreate = summarize(floorCycles.map((c) => c.createMs));
  const floorRelease = summarize(floorCycles.map((c) => c.releaseMs));
  const ratios = {
    unit: 'ratio (API latency / floor latency)',
    create_median: ratio(apiCreate.median, floorCreate.median),
    create_p99: ratio(apiCreate.p99, floorCreate.p99),
    release_median: ratio(apiRelease.median, floorRelease.median),
    release_p99: ratio(apiRelease.p99, floorRelease.p99),
  };

  const cpuList = cpus();
  const report = {
    bench: 'fleetward control plane',
    date: new Date().toISOString(),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    machine: { cores: cpuList.length, cpu_model: cpuList[0]?.model ?? 'unknown', memory_gib: round(totalmem() / 2 ** 30, 1) },
    wall_time: { unit: 's', total: round((performance.now() - started) / 1000, 1), api_and_floor: round(apiPhaseS, 1) },
    config: {
      samples_per_operation: { api: apiCycles.length, floor: floorCycles.length },
      warmup_rounds: { api: API_WARMUP, floor: FLOOR_WARMUP },
      blocks: BLOCKS,
      api_site: {
        machines: API_MACHINES,
        machine_type: MACHINE_TYPE,
        sweep_interval_ms: API_SWEEP_INTERVAL_MS,
        toml: apiSiteToml.trim().split('\n'),
        method:
          'sequential: POST create (timed, until the response body is read), wait until the instance is Ready and the stream poller is idle, DELETE (timed), wait until the machine is Ready again and the stream is idle; fetch over keep-alive to the local HTTP server in the same process',
      },
      floor: {
        table: 'scratch table from tableDefinition(), seeded with copies of the site\'s catalog, heartbeat and machine items',
        create: 'GetItem catalog + GetItem site heartbeat + Query allocatable (Limit 100) + TransactWriteItems [conditional machine Put, instance Put, history Put]',
        release: 'GetItem instance + GetItem machine + TransactWriteItems [conditional instance Put, conditional machine Put, history Put]; machine put back to Ready untimed',
      },
    },
    create: {
      api: apiCreate,
      floor: floorCreate,
      ratio: { unit: ratios.unit, median: ratios.create_median, p99: ratios.create_p99 },
      api_cost: perOperation(apiCycles.map((c) => c.createCost)),
      floor_cost: perOperation(floorCycles.map((c) => c.createCost)),
    },
    release: {
      api: apiRelease,
      floor: floorRelease,
      ratio: { unit: ratios.unit, median: ratios.release_median, p99: ratios.release_p99 },
      api_cost: perOperation(apiCycles.map((c) => c.releaseCost)),
      floor_cost: perOperation(floorCycles.map((c) => c.releaseCost)),
    },
    ratios,
    blocks: { unit: 'ms (median of each interleaved block)', items: blocks },
    heartbeat,
    dynamodb_local_left_running: javaLeft,
  };

  const json = JSON.stringify(report, null, 2);
  const out = join(dirname(fileURLToPath(import.meta.url)), 'results', 'latest.json');
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${json}\n`);
  process.stdout.write(`${json}\n`);
  progress(`done in ${report.wall_time.total} s; written to ${out}`);
  if (javaLeft) throw new Error(`DynamoDB Local on port ${port} is still running`);
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
