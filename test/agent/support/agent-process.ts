// The real daemon, as a site runs it: `node agent/main.ts --config <file>` in a process of its own, which a test can
// SIGKILL mid-operation and start again on the same journal. Calls to it are signed as the controller signs them.

import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { signRequest, type SigningKey } from '#site/request-signing.ts';

export const REPO_ROOT = join(import.meta.dirname, '../../..');
export const TEST_KEY: SigningKey = { id: 'k1', secret: '0123456789abcdef0123456789abcdef-agent-tests' };

export interface AgentProcess {
  url: string;
  output: () => string;
  /** Resolves when a line matching `pattern` has been logged. */
  logged(pattern: RegExp, timeoutMs?: number): Promise<void>;
  call(method: string, path: string, body?: unknown, key?: SigningKey): Promise<{ status: number; body: any }>;
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Sends a signal and does not wait (SIGHUP: read the signing keys again). */
  signal(signal: NodeJS.Signals): void;
}

export async function startAgentProcess(configPath: string): Promise<AgentProcess> {
  const child: ChildProcess = spawn(process.execPath, [join(REPO_ROOT, 'agent/main.ts'), '--config', configPath], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    for (const wake of waiters) wake();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  child.on('exit', () => {
    for (const wake of waiters) wake();
  });
  const logged = (pattern: RegExp, timeoutMs = 15_000) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => done(new Error(`not logged within ${timeoutMs} ms: ${pattern}\n${output}`)), timeoutMs);
      const check = () => {
        if (pattern.test(output)) done();
        else if (child.exitCode !== null) done(new Error(`the agent exited ${child.exitCode} before logging ${pattern}:\n${output}`));
      };
      const done = (error?: Error) => {
        clearTimeout(timer);
        waiters.delete(check);
        if (error) reject(error);
        else resolve();
      };
      waiters.add(check);
      check();
    });
  await logged(/listening on (http:\/\/\S+)/);
  const url = /listening on (http:\/\/\S+)/.exec(output)![1]!;
  return {
    url,
    output: () => output,
    logged,
    async call(method, path, body, key = TEST_KEY) {
      const text = body === undefined ? '' : JSON.stringify(body);
      const headers = signRequest({ keys: [key], current: key.id }, { method, target: path, body: text }, new Date());
      const response = await fetch(`${url}${path}`, {
        method,
        headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: text }),
      });
      const answer = await response.text();
      return { status: response.status, body: answer ? JSON.parse(answer) : undefined };
    },
    signal(signal) {
      child.kill(signal);
    },
    async kill(signal = 'SIGKILL') {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill(signal);
      await exited;
    },
  };
}

export interface TestMachine {
  id: string;
  /** TOML for the machine's bmc, e.g. a Redfish mockup service's. */
  bmc: string;
  probes?: string;
}

/** An agent config for tests: the recording controller, the test key, the hooks given, fast loops. */
export function writeAgentConfig(
  dir: string,
  options: { controllerUrl: string; token: string; machines: TestMachine[]; hooks?: string; extra?: string },
): string {
  const path = join(dir, 'agent.toml');
  writeFileSync(join(dir, 'token'), options.token);
  writeFileSync(join(dir, 'keys.json'), JSON.stringify({ keys: [TEST_KEY], current: TEST_KEY.id }));
  const machines = options.machines.map(
    (m) => `
[[machines]]
id = "${m.id}"
type = "h100"
rack = "rack-1"
bmc = ${m.bmc}
${m.probes ? `probes = ${m.probes}` : ''}`,
  );
  writeFileSync(
    path,
    `[agent]
listen_port = 0
journal = "${join(dir, 'journal.jsonl')}"
heartbeat_interval_seconds = 0.2
probe_interval_seconds = 0.5
report_retry_seconds = [0.1, 0.2]
${options.extra ?? ''}

[controller]
url = "${options.controllerUrl}"
token = { file = "${join(dir, 'token')}" }

[signing]
keys_file = "${join(dir, 'keys.json')}"

[hooks]
${options.hooks ?? ''}
${machines.join('\n')}
`,
  );
  return path;
}
