import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Runs the real `fleetward` CLI (bin/fleetward.ts) as a child process, as a person or a script would.

const bin = fileURLToPath(new URL('../../bin/fleetward.ts', import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (for `--output json`). */
  json(): any;
}

type RunOptions = { token?: string | null; env?: Record<string, string>; stdin?: string };

export interface CliRunner {
  (args: string[], options?: RunOptions): Promise<CliResult>;
  /** Starts the CLI and hands back the process, for commands that run until stopped (`machine watch`). */
  start(args: string[], options?: Omit<RunOptions, 'stdin'>): ChildProcessWithoutNullStreams;
  /** The config file this runner points FLEETWARD_CONFIG at (empty until a test writes it). */
  configFile: string;
}

/** A runner for one site: FLEETWARD_URL set, FLEETWARD_TOKEN from `token` (null: none), polling fast. */
export function cliFor(url: string, defaultToken?: string): CliRunner {
  const configFile = join(mkdtempSync(join(tmpdir(), 'fleetward-cli-')), 'config.json');
  const start = (args: string[], options: RunOptions = {}) => {
    const token = options.token === undefined ? defaultToken : options.token;
    const env: Record<string, string> = {
      ...(Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('FLEETWARD_'))) as Record<string, string>),
      FLEETWARD_URL: url,
      FLEETWARD_CONFIG: configFile,
      FLEETWARD_POLL_MS: '100',
      ...(token ? { FLEETWARD_TOKEN: token } : {}),
      ...options.env,
    };
    return spawn(process.execPath, [bin, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  };
  const run = ((args, options = {}) => {
    return new Promise<CliResult>((resolve, reject) => {
      const child = start(args, options);
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      child.on('error', reject);
      child.on('close', (code) =>
        resolve({
          code: code ?? -1,
          stdout,
          stderr,
          json: () => {
            try {
              return JSON.parse(stdout);
            } catch {
              throw new Error(`fleetward ${args.join(' ')}: stdout is not JSON (exit ${code})\nstdout: ${stdout}\nstderr: ${stderr}`);
            }
          },
        }),
      );
      child.stdin.end(options.stdin ?? '');
    });
  }) as CliRunner;
  run.configFile = configFile;
  run.start = start;
  return run;
}

/** For assertion messages: the whole run. */
export const shown = (args: string[], r: CliResult) => `fleetward ${args.join(' ')} -> exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
