import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';

// `npm start` as a newcomer runs it: the real entry point in a child process.

const entry = 'bin/local.ts';

function run(env: Record<string, string>) {
  return spawnSync(process.execPath, [entry], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 30_000 });
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
    const javaRunning = () => spawnSync('pgrep', ['-f', `DynamoDBLocal.jar.*-port ${dynamoPort}`]).status === 0;
    expect(javaRunning()).toBe(true);

    child.kill('SIGINT');
    expect(await exited).toBe(0);
    await new Promise((r) => setTimeout(r, 500));
    expect(javaRunning()).toBe(false);
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
