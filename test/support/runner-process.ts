import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { inject } from 'vitest';
import type { Instance, Machine, MetaInstance, Role } from '#domain/core/model.ts';
import { AWS_CALL_LOG_ENV } from '#local/aws-call-recorder.ts';
import type { RunnerCounters } from '#local/runner-counters.ts';
import { signRequest, type SigningKeySet } from '#site/request-signing.ts';
import { createDocumentClient } from '#store/client.ts';
import { nextSweepDone } from './next-sweep.ts';

// The local runner as `npm start` runs it, in a child process that leads its own process group, so that a test can
// crash the whole tree at once (node, the DynamoDB Local wrapper, java) with SIGKILL and start it again on the same
// FLEETWARD_DATA_DIR.

export interface RunnerOptions {
  dataDir: string;
  /** The site config's TOML; written to the data dir (FLEETWARD_SITE_CONFIG). Its `[site] name` names the table. */
  config: string;
  siteName: string;
  startTimeoutMs?: number;
  /** Where `bin/local.ts` is: another release's worktree (test/support/upgrade/release-worktree.ts). Default: this one. */
  cwd?: string;
  env?: Record<string, string>;
}

export interface Answer {
  status: number;
  body: any;
}

export interface RunnerProcess {
  api: string;
  /** The simulated site agent's own API (GET {agent}/instances/{name}). */
  agent: string;
  /** The runner's DynamoDB Local. */
  dynamoEndpoint: string;
  /** A call to the agent's own API, signed with a key of the test's that the agent was told to accept. */
  callAgent(method: string, path: string): Promise<Answer>;
  call(method: string, path: string, options?: { token?: string; body?: unknown }): Promise<Answer>;
  token(org: string, roles: Role[], sub?: string): Promise<string>;
  /** What the runner has done since it started, as GET /health shows it. */
  counters(): Promise<RunnerCounters>;
  /** Resolves once a sweep that began after this call has finished; rejects after `withinMs`. */
  afterNextSweep(withinMs: number): Promise<void>;
  /** Every stored machine, instance and meta-instance, read from the runner's DynamoDB Local (a Scan: tests only). */
  records(): Promise<{ machines: Machine[]; instances: Instance[]; metaInstances: MetaInstance[] }>;
  /** SIGKILL to the whole process tree, as a crash; resolves once it is gone and its DynamoDB Local answers no more. */
  kill(): Promise<void>;
  /** SIGTERM, as Ctrl-C: the runner stops its parts and DynamoDB Local; resolves once the process has exited. */
  stop(): Promise<void>;
  output(): string;
}

const OUTPUT_KEPT = 20_000;

export async function startRunner(options: RunnerOptions): Promise<RunnerProcess> {
  const configFile = join(options.dataDir, 'site.toml');
  writeFileSync(configFile, options.config);
  const child = spawn(process.execPath, ['bin/local.ts'], {
    ...(options.cwd ? { cwd: options.cwd } : {}),
    env: {
      ...process.env,
      PORT: '0',
      FLEETWARD_DATA_DIR: options.dataDir,
      FLEETWARD_SITE_CONFIG: configFile,
      [AWS_CALL_LOG_ENV]: inject('awsCallLogDir'),
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  // The banner's addresses, caught as their lines go by: a site that logs every reaction as JSON scrolls them out
  // of the kept tail within moments.
  const banner = { api: /API\s+(http:\/\/\S+)/, agent: /site agent\s+simulated, (http:\/\/\S+)/, dynamo: /DynamoDB Local on (http:\/\/\S+)/ };
  const seen: Partial<Record<keyof typeof banner, string>> = {};
  let partial = '';
  const keep = (chunk: Buffer) => {
    const text = chunk.toString();
    output = (output + text).slice(-OUTPUT_KEPT);
    const lines = (partial + text).split('\n');
    partial = lines.pop()!;
    for (const line of lines) for (const [name, pattern] of Object.entries(banner)) seen[name as keyof typeof banner] ??= pattern.exec(line)?.[1];
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  while (!(seen.api && seen.agent && seen.dynamo)) {
    if (child.exitCode !== null || Date.now() > deadline) {
      killTree(child);
      throw new Error(`the local runner did not come up (banner so far: ${JSON.stringify(seen)}):\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const { api, agent, dynamo } = seen as Record<keyof typeof banner, string>;
  const documents = createDocumentClient(dynamo);

  const call: RunnerProcess['call'] = async (method, path, { token, body } = {}) => {
    const response = await fetch(`${api}${path}`, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };

  // The agent serves signed calls only, with keys the runner made for its controller: the test adds one of its own.
  const testKey = { id: 'runner-process-test', secret: randomBytes(32).toString('hex') };
  const testKeys: SigningKeySet = { keys: [testKey], current: testKey.id };
  const added = await call('POST', '/_sim/keys', { body: testKey });
  // 404: a release before signed agent calls (0.1.0, test/support/upgrade), whose agent takes no keys.
  if (added.status !== 200 && added.status !== 404) throw new Error(`the agent refused the test's signing key: ${added.status} ${JSON.stringify(added.body)}`);

  const counters = async () => (await call('GET', '/health')).body.counters as RunnerCounters;

  return {
    api,
    agent,
    dynamoEndpoint: dynamo,
    call,
    async callAgent(method, path) {
      const response = await fetch(`${agent}${path}`, { method, headers: signRequest(testKeys, { method, target: path, body: '' }, new Date()) });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : undefined };
    },
    counters,
    afterNextSweep: (withinMs) => nextSweepDone(counters, withinMs),
    async token(org, roles, sub = `${org}-user`) {
      return (await call('POST', '/_local/token', { body: { sub, org, roles } })).body.token;
    },
    async records() {
      const items: Record<string, unknown>[] = [];
      let start: Record<string, unknown> | undefined;
      do {
        const page = await documents.send(new ScanCommand({ TableName: `fleetward-${options.siteName}`, ConsistentRead: true, ExclusiveStartKey: start }));
        items.push(...(page.Items ?? []));
        start = page.LastEvaluatedKey;
      } while (start);
      const of = <T>(entity: string) => items.filter((item) => item.entity === entity) as unknown as T[];
      return { machines: of<Machine>('machine'), instances: of<Instance>('instance'), metaInstances: of<MetaInstance>('meta-instance') };
    },
    async kill() {
      killTree(child);
      await exited;
      documents.destroy();
      // The killed java may take a moment to let go of its port and its files.
      while (
        await fetch(dynamo).then(
          () => true,
          () => false,
        )
      )
        await new Promise((r) => setTimeout(r, 100));
    },
    async stop() {
      process.kill(-child.pid!, 'SIGTERM');
      await exited;
      documents.destroy();
    },
    output: () => output,
  };
}

function killTree(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    // already gone
  }
}
