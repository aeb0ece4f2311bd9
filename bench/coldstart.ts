// `coldstart` part: every function the stack deploys, bundled for real by a synth (bench/bundles.ts), imported in a
// fresh Node process with the environment the template gives it and invoked once against
// DynamoDB Local, as Lambda does after a cold start. Judged by import + first invoke against the goal.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { APIGatewayProxyEventV2WithJWTAuthorizer, DynamoDBStreamEvent } from 'aws-lambda';
import { createTables } from '#local/tables.ts';
import { demoFleet } from '#local/site-agent/demo-fleet.ts';
import type { TableNames } from '#store/client.ts';
import { synthesizeBundles, synthesizeFloorBundle, type SynthesizedBundle } from './bundles.ts';
import { ratio, round, summarize } from './stats.ts';
import { BUNDLE_LIMIT_BYTES } from '#lib/fleetward-function.ts';

export const COLDSTART_GOAL_MS = 120;

export interface ColdstartOptions {
  /** Fresh processes per function; the figures are their median and maximum. */
  runs: number;
}
export const defaultColdstartOptions: ColdstartOptions = { runs: 5 };

export interface Invocation {
  import_ms: number;
  invoke_ms: number;
  import_cpu_ms: number;
  /** CPU time (user + system) of import and first invoke together. */
  total_cpu_ms: number;
  result: unknown;
  /** From spawning the process until it exited: Node's own start included. */
  process_ms: number;
}

const childScript = join(import.meta.dirname, 'invoke-bundle.ts');

/** Imports `bundle` in a fresh Node process with `environment` (nothing inherited but PATH) and invokes it once. */
export function invokeInFreshProcess(bundle: SynthesizedBundle, environment: Record<string, string>, event: unknown): Promise<Invocation> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [childScript, bundle.file, JSON.stringify(event)], {
      env: { PATH: process.env.PATH ?? '', ...environment },
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    let report = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdio[3]!.on('data', (chunk: Buffer) => (report += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0 || report === '') return reject(new Error(`${bundle.name}: exit ${code}\n${stderr.slice(-2000)}`));
      resolve({ ...(JSON.parse(report) as Omit<Invocation, 'process_ms'>), process_ms: performance.now() - started });
    });
  });
}

/** What Lambda would give the function, with DynamoDB Local and the bench's tables in place of the stack's. */
export function localEnvironment(bundle: SynthesizedBundle, endpoint: string, names: TableNames): Record<string, string> {
  const literal = Object.fromEntries(Object.entries(bundle.environment).filter((entry): entry is [string, string] => entry[1] !== undefined));
  return {
    ...literal,
    TABLE_NAME: names.table,
    IDEMPOTENCY_TABLE_NAME: names.idempotencyTable,
    EVENT_BUS_NAME: 'fleetward-bench',
    SITE_AGENT_URL: literal.SITE_AGENT_URL ?? 'http://127.0.0.1:9',
    AWS_ENDPOINT_URL_DYNAMODB: endpoint,
    AWS_REGION: 'us-east-1',
    // As Lambda sets them: the execution role's credentials (DynamoDB Local accepts any).
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_SESSION_TOKEN: 'local',
    AWS_LAMBDA_FUNCTION_NAME: bundle.name,
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '1024',
    // Powertools Tracer traces only where these say Lambda (elsewhere it turns itself off), and the X-Ray SDK
    // opens the invocation's segment from the trace header: a sampled one, as active tracing gives. Its segments go
    // over UDP to an address where nothing listens.
    AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
    LAMBDA_TASK_ROOT: bundle.dir,
    _X_AMZN_TRACE_ID: 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1',
    AWS_XRAY_DAEMON_ADDRESS: '127.0.0.1:2000',
  };
}

/** An HTTP API (payload 2.0) request as API Gateway hands it over after its JWT authorizer. */
export function httpEvent(method: string, routeKeyPath: string, rawPath: string, claims?: Record<string, string>): APIGatewayProxyEventV2WithJWTAuthorizer {
  const now = Date.now();
  return {
    version: '2.0',
    routeKey: `${method} ${routeKeyPath}`,
    rawPath,
    rawQueryString: '',
    headers: { host: 'bench.local', 'user-agent': 'fleetward-bench' },
    isBase64Encoded: false,
    requestContext: {
      accountId: '000000000000',
      apiId: 'bench',
      domainName: 'bench.local',
      domainPrefix: 'bench',
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'fleetward-bench' },
      requestId: `bench-${now}`,
      routeKey: `${method} ${routeKeyPath}`,
      stage: '$default',
      time: new Date(now).toISOString(),
      timeEpoch: now,
      ...(claims ? { authorizer: { jwt: { claims, scopes: [] }, principalId: '', integrationLatency: 0 } } : {}),
    } as APIGatewayProxyEventV2WithJWTAuthorizer['requestContext'],
  };
}

const ORG = 'bench-org';

/** One realistic first request per function: each reads DynamoDB. */
function eventFor(bundle: SynthesizedBundle): unknown {
  if (bundle.name === 'StreamHandler') {
    const stream: DynamoDBStreamEvent = {
      Records: [
        {
          eventID: '1',
          eventName: 'MODIFY',
          eventSource: 'aws:dynamodb',
          awsRegion: 'us-east-1',
          dynamodb: { Keys: { pk: { S: 'MACHINE#coldstart-m1' }, sk: { S: '#MACHINE' } }, SequenceNumber: '1', StreamViewType: 'NEW_AND_OLD_IMAGES' },
        },
      ],
    };
    return stream;
  }
  if (bundle.name === 'SweepHandler') return {};
  // Each API function serves its own route group alone: a request of that group.
  if (bundle.name === 'AdminApi')
    return httpEvent('GET', '/admin/machines', '/admin/machines', { sub: 'bench-admin', org: 'provider', roles: '[provider-admin]' });
  if (bundle.name === 'SiteAgentApi') {
    const heartbeat = httpEvent('POST', '/site/v1/heartbeats', '/site/v1/heartbeats', { sub: 'bench-agent', org: 'site', roles: '[site-agent]' });
    const machines = demoFleet([{ type: 'gb200', count: 2, racks: 1 }]).map((machine) => ({ id: machine.id }));
    return { ...heartbeat, headers: { ...heartbeat.headers, 'content-type': 'application/json' }, body: JSON.stringify({ machines }) };
  }
  const path = '/v2/org/{org}/nico/instance';
  return httpEvent('GET', path, path.replace('{org}', ORG), { sub: 'bench-tenant', org: ORG, roles: '[tenant]' });
}

function figures(bundle: SynthesizedBundle, runs: Invocation[]) {
  const total = summarize(runs.map((r) => r.import_ms + r.invoke_ms));
  return {
    bundle_kib: round(bundle.bytes / 1024, 1),
    bundle: { unit: 'bytes minified', value: bundle.bytes, goal: BUNDLE_LIMIT_BYTES, ratio_to_goal: ratio(bundle.bytes, BUNDLE_LIMIT_BYTES) },
    import_and_first_invoke: {
      unit: 'ms',
      median: total.median,
      max: total.max,
      goal: COLDSTART_GOAL_MS,
      ratio_to_goal: ratio(total.median, COLDSTART_GOAL_MS),
    },
    import: summarize(runs.map((r) => r.import_ms)),
    first_invoke: summarize(runs.map((r) => r.invoke_ms)),
    cpu: {
      unit: 'ms of CPU time (user + system) in the process: what the wall clock would be on an idle core',
      import_and_first_invoke: summarize(runs.map((r) => r.total_cpu_ms)),
      import: summarize(runs.map((r) => r.import_cpu_ms)),
    },
    whole_process: summarize(runs.map((r) => r.process_ms)),
    first_result: runs[0]!.result,
  };
}

export async function coldstartBench(endpoint: string, id: string, options: ColdstartOptions, progress: (line: string) => void) {
  const outdir = mkdtempSync(join(tmpdir(), 'fleetward-coldstart-'));
  try {
    const synthStarted = performance.now();
    const bundles = synthesizeBundles(outdir);
    const synthS = round((performance.now() - synthStarted) / 1000, 1);
    progress(`coldstart: synthesized ${bundles.length} functions with bundling in ${synthS} s`);
    const names = { table: `coldstart-${id}`, idempotencyTable: `coldstart-${id}-idempotency` };
    await createTables(endpoint, names);

    const measure = async (bundle: SynthesizedBundle) => {
      const runs: Invocation[] = [];
      for (let i = 0; i < options.runs; i++) runs.push(await invokeInFreshProcess(bundle, localEnvironment(bundle, endpoint, names), eventFor(bundle)));
      const measured = figures(bundle, runs);
      const total = measured.import_and_first_invoke;
      progress(
        `coldstart: ${bundle.name} ${Math.round(bundle.bytes / 1024)} KiB, import + first invoke ` +
          `median ${total.median} ms (max ${total.max}), CPU ${measured.cpu.import_and_first_invoke.median} ms`,
      );
      return measured;
    };
    const floor = await measure(synthesizeFloorBundle(join(outdir, 'floor')));
    const functions: Record<string, ReturnType<typeof figures> & { ratio_to_floor: number }> = {};
    for (const bundle of bundles) {
      const measured = await measure(bundle);
      functions[bundle.name] = { ...measured, ratio_to_floor: ratio(measured.import_and_first_invoke.median, floor.import_and_first_invoke.median) };
    }
    return {
      config: {
        runs_per_function: options.runs,
        synth_with_bundling_s: synthS,
        method:
          "cdk synth of sites/example-aws.toml with bundling (local esbuild); each function's index.mjs imported in a fresh `node` " +
          "process with the template's environment (table and bus names pointed at DynamoDB Local), then its handler invoked once: " +
          'TenantApi GET /v2/org/{org}/nico/instance as a tenant, AdminApi GET /admin/machines as a provider admin, SiteAgentApi ' +
          "POST /site/v1/heartbeats of two machines, stream one machine MODIFY record, sweep the schedule's event. Timed " +
          "inside the process with performance.now(): import, first invoke; whole_process adds Node's own start and exit",
      },
      floor: {
        what:
          "coldstart-floor-handler.ts: one GetItem through the AWS SDK v3 and nothing else, bundled by the stack's own FleetwardFunction: " +
          "the least a function that reads DynamoDB costs on this host; each function's ratio_to_floor is its median over this one's",
        ...floor,
      },
      functions,
    };
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}
