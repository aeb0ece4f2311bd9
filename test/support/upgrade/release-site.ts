import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { caller } from './seed-release-0-1-0.ts';

type Json = Record<string, any>;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** This release's local site config for the upgrade tests: a contract runs at once, and the sweep migrates often. */
export const UPGRADE_CONFIG = `${readFileSync('sites/local.toml', 'utf8')}\n[migrations]\ncontract_after_minutes = 0\nsweep_seconds = 5\n`;

/** A data folder an earlier release seeds once, and a fresh copy of it for each test; all removed at the end. */
export function seededData(release: string) {
  const dir = mkdtempSync(join(tmpdir(), `fleetward-${release}-data-`));
  const dirs = [dir];
  return {
    dir,
    copy(): string {
      const copy = mkdtempSync(join(tmpdir(), 'fleetward-upgrade-'));
      cpSync(dir, copy, { recursive: true });
      dirs.push(copy);
      return copy;
    },
    remove(): void {
      for (const each of dirs) rmSync(each, { recursive: true, force: true });
    },
  };
}

export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(250);
  }
}

/** Every item of a listing, page after page. */
export async function listAll(call: ReturnType<typeof caller>, path: string): Promise<Json[]> {
  const items: Json[] = [];
  let nextToken: string | undefined;
  do {
    const answer = await call('GET', `${path}${path.includes('?') ? '&' : '?'}limit=100${nextToken ? `&nextToken=${encodeURIComponent(nextToken)}` : ''}`);
    if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${JSON.stringify(answer.json)}`);
    items.push(...(answer.json.items as Json[]));
    nextToken = answer.json.nextToken;
  } while (nextToken);
  return items;
}

/** Every migration done, as the site's admin API says. */
export const migrationsDone = (admin: ReturnType<typeof caller>, timeoutMs = 120_000) =>
  until(
    'every migration done',
    async () => {
      const items = (await admin('GET', '/admin/migrations')).json.items as Json[];
      return items.every((m) => m.state === 'done') ? items : undefined;
    },
    timeoutMs,
  );

/**
 * An earlier release's site in its own process, from its worktree, on the table of a running site of this release (one
 * DynamoDB Local): the two releases side by side during a deploy. `siteModule`: where that release starts a site.
 */
export async function startReleaseBeside(releaseDir: string, endpoint: string, siteModule: '#local/site.ts' | '#local/runner.ts') {
  const script = join(releaseDir, 'beside.ts');
  // 0.1.0's site takes a function for its log; later ones a sink of their own, which writes to stdout.
  const quiet = siteModule === '#local/site.ts' ? ', log: () => {}' : '';
  writeFileSync(
    script,
    `import { readFileSync } from 'node:fs';
import { parseSiteConfig } from '#config/site-config.ts';
import { startLocalSite } from '${siteModule}';
const config = parseSiteConfig(readFileSync('sites/local.toml', 'utf8'));
const names = { table: 'fleetward-local', idempotencyTable: 'fleetward-local-idempotency' };
const site = await startLocalSite({ config, port: 0, dynamoEndpoint: process.env.BESIDE_DYNAMO, tableNames: names, registerFleet: false${quiet} });
console.log('API ' + site.url);
process.on('SIGTERM', () => site.stop().then(() => process.exit(0)));
`,
  );
  const child = spawn(process.execPath, [script], { cwd: releaseDir, env: { ...process.env, BESIDE_DYNAMO: endpoint }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const api = await until(
    `the release in ${releaseDir} beside`,
    async () => /API (http:\/\/\S+)/.exec(output)?.[1] ?? (child.exitCode === null ? undefined : Promise.reject(new Error(output))),
    60_000,
  );
  return {
    api,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
