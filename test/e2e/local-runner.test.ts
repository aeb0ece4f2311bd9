import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';

// `npm start` as a newcomer runs it: the real entry point in a child process.

const entry = 'bin/local.ts';

function run(env: Record<string, string>) {
  return spawnSync(process.execPath, [entry], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 30_000 });
}

const STOPPED_WITHIN_MS = 5_000;

/** The processes under `pid`, from /proc (Linux). */
function descendants(pid: number): number[] {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
  return children.flatMap((child) => [child, ...descendants(child)]);
}

const commandOf = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return undefined;
  }
};

/** Gone, or a zombie its parent has yet to reap: nothing runs. */
function isGone(pid: number): boolean {
  if (!existsSync(`/proc/${pid}`)) return true;
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') ?? true;
  } catch {
    return true;
  }
}

interface Started {
  root: ChildProcess;
  npm: number;
  java: number;
}

/**
 * The site the stop tests start: what they stop is the processes, not the fleet, so a fleet of two keeps each start
 * cheap (32 machines registering and validating took most of each start's CPU).
 */
function smallSiteConfig(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'fleetward-small-')), 'small.toml');
  writeFileSync(file, '[site]\nname = "small"\n[simulator]\nmachines = [ { type = "h100", count = 2, racks = 1 } ]\n');
  return file;
}

/** `npm start` as a terminal's foreground job (npm leads its own process group), or as a script's `npm start &`. */
async function startNpm(how: 'foreground' | 'background in a script'): Promise<Started> {
  const env = { ...process.env, PORT: '0', FLEETWARD_SITE_CONFIG: smallSiteConfig() };
  const root =
    how === 'foreground'
      ? spawn('npm', ['start'], { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn('bash', ['-c', 'npm start & wait'], { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  onTestFinished(() => {
    try {
      process.kill(-root.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  let output = '';
  root.stdout!.on('data', (chunk) => (output += chunk));
  root.stderr!.on('data', (chunk) => (output += chunk));
  const deadline = Date.now() + 60_000;
  while (!/Press Ctrl-C to stop/.test(output)) {
    if (Date.now() > deadline || root.exitCode !== null) throw new Error(`npm start did not come up:\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const tree = descendants(root.pid!);
  const npm = how === 'foreground' ? root.pid! : tree.find((pid) => /npm/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8')))!;
  const java = tree.find((pid) => commandOf(pid) === 'java');
  expect(java, `java under npm start: ${tree.map((pid) => `${pid} ${commandOf(pid)}`).join(', ')}`).toBeDefined();
  return { root, npm, java: java! };
}

async function expectGoneWithin(pid: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!isGone(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  expect(isGone(pid), `process ${pid} (${commandOf(pid)}) still runs ${ms} ms after the signal`).toBe(true);
}

describe('the local runner', () => {
  it('starts everything, answers /health, and Ctrl-C leaves no java process behind', { timeout: 90_000 }, async () => {
    const child = spawn(process.execPath, [entry], { env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    onTestFinished(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    const deadline = Date.now() + 50_000;
    while (!/API\s+(http:\/\/\S+)/.test(output) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const api = /API\s+(http:\/\/\S+)/.exec(output)?.[1];
    const dynamoPort = /DynamoDB Local on http:\/\/127\.0\.0\.1:(\d+)/.exec(output)?.[1];
    expect(api, output).toBeDefined();
    expect(dynamoPort).toBeDefined();

    let health = 0;
    while (health !== 200 && Date.now() < deadline) {
      health = (await fetch(`${api}/health`).catch(() => ({ status: 0 }))).status;
      if (health !== 200) await new Promise((r) => setTimeout(r, 200));
    }
    expect(health).toBe(200);
    const servesPort = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`-port\0${dynamoPort}`);
    const java = descendants(child.pid!).find((pid) => commandOf(pid) === 'java' && servesPort(pid));
    expect(java, 'java serving the DynamoDB Local port the runner named').toBeDefined();

    child.kill('SIGINT');
    expect(await exited).toBe(0);
    await expectGoneWithin(java!, STOPPED_WITHIN_MS);
  });

  it('stops with one line naming what to install when java is missing', () => {
    // A PATH with node but no java.
    const bin = mkdtempSync(join(tmpdir(), 'fleetward-nojava-'));
    symlinkSync(process.execPath, join(bin, 'node'));
    const result = run({ PATH: bin });
    expect(result.status).toBe(1);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/Java 17.*install/i);
  });

  it('stops with a message naming the key when the site config is wrong', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'fleetward-config-')), 'bad.toml');
    writeFileSync(file, '[heartbeat]\ntimeout_secs = 30\n[instance_create_retry]\nmax_attempts = 11\n');
    const result = run({ FLEETWARD_SITE_CONFIG: file });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('heartbeat.timeout_secs: unknown key');
    expect(result.stderr).toContain('instance_create_retry.max_attempts');
  });
});

// Every way of stopping `npm start` ends DynamoDB Local's java within STOPPED_WITHIN_MS: the signal a terminal sends
// the whole foreground group (Ctrl-C, or its closing), the one `kill` sends npm alone, and a script's `npm start &`,
// whose npm starts with SIGINT ignored.

describe('stopping npm start leaves no java process behind', { timeout: 90_000 }, () => {
  const ways: Array<[string, 'foreground' | 'background in a script', NodeJS.Signals, 'group' | 'npm']> = [
    ['Ctrl-C: SIGINT to the foreground group', 'foreground', 'SIGINT', 'group'],
    ['the terminal closing: SIGHUP to the foreground group', 'foreground', 'SIGHUP', 'group'],
    ['a supervisor: SIGTERM to the whole group', 'foreground', 'SIGTERM', 'group'],
    ['`kill <npm>`: SIGTERM to npm alone', 'foreground', 'SIGTERM', 'npm'],
    ['`kill -HUP <npm>`: npm dies and forwards nothing', 'foreground', 'SIGHUP', 'npm'],
    ['`npm start &` then `kill -INT $!`: npm started with SIGINT ignored', 'background in a script', 'SIGINT', 'npm'],
  ];
  it.each(ways)('%s', async (_way, how, signal, to) => {
    const { root, npm, java } = await startNpm(how);
    process.kill(to === 'group' ? -root.pid! : npm, signal);
    await expectGoneWithin(java, STOPPED_WITHIN_MS);
  });
});
