import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Role } from '#domain/core/model.ts';
import { startRunner, type RunnerProcess } from './runner-process.ts';

// The crash tests' site: the local runner (`npm start`) on a data dir of its own, killed with SIGKILL and started
// again on the same dir as often as a test asks.

export interface CrashableRunnerOptions {
  /** The site config's TOML, and its `[site] name`. */
  config: string;
  siteName: string;
  /** How long java and the runner may take to come up: their own time, not the site's. */
  runnerUpMs: number;
  /** How long `eventually` waits unless told otherwise. */
  defaultWaitMs: number;
}

export function crashableRunner({ config, siteName, runnerUpMs, defaultWaitMs }: CrashableRunnerOptions) {
  const dataDir = mkdtempSync(join(tmpdir(), `fleetward-${siteName}-`));
  let runner: RunnerProcess | undefined;
  let upAt = 0;

  const site = (): RunnerProcess => {
    if (!runner) throw new Error('the runner is not running');
    return runner;
  };

  async function eventually<T>(what: string, check: () => Promise<T | undefined | null | false>, timeoutMs = defaultWaitMs): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await check();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms; runner output:\n${site().output().split('\n').slice(-30).join('\n')}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /** Tokens are minted by the runner's own issuer, whose keys a restart renews. */
  const as = (org: string, roles: Role[], sub?: string) => site().token(org, roles, sub);

  return {
    site,
    eventually,
    as,
    /** When the runner last came up (before the fleet was allocatable again). */
    upAt: () => upAt,
    /** Starts the runner on the data dir; resolves once at least `allocatable` machines are (0: once the API answers). */
    async start({ allocatable = 1, withinMs = defaultWaitMs } = {}): Promise<void> {
      runner = await startRunner({ dataDir, config, siteName, startTimeoutMs: runnerUpMs });
      upAt = Date.now();
      const admin = await as('provider', ['provider-admin']);
      await eventually(
        `${allocatable} machines allocatable`,
        async () => (await site().call('GET', '/admin/machines?allocatable=true', { token: admin })).body.items?.length >= allocatable,
        withinMs,
      );
    },
    /** SIGKILL to the whole process tree, as a crash. */
    async kill(): Promise<void> {
      await site().kill();
      runner = undefined;
    },
    /** Stops whatever runs and removes the data dir. */
    async dispose(): Promise<void> {
      await runner?.kill();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
