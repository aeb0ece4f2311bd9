// Runs one external command (a hook, a probe, ipmitool) with a deadline, and keeps what a report needs: the exit
// status and the last lines it printed. Nothing here retries: the caller decides what a failure means.

import { spawn } from 'node:child_process';

export interface CommandOutcome {
  /** The exit status; null when it was killed (timeout, or a signal from elsewhere). */
  code: number | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  /** Could not start at all (ENOENT...). */
  spawnError?: string;
}

export interface RunCommandOptions {
  /** argv form: no shell. */
  argv?: readonly string[];
  /** shell form: `sh -c <command>`, for hooks and probes written by the site. */
  shell?: string;
  env?: Record<string, string>;
  timeoutMs: number;
  /** Written to stdin, then closed. */
  input?: string;
  /** How much output to keep (bytes each stream): a chatty tool must not fill the agent's memory. */
  keepBytes?: number;
}

const KILL_GRACE_MS = 2_000;

export function runCommand(options: RunCommandOptions): Promise<CommandOutcome> {
  const [file, ...args] = options.argv ?? ['sh', '-c', options.shell ?? 'false'];
  const keep = options.keepBytes ?? 1024 * 1024;
  return new Promise((resolve) => {
    // Its own process group, so a timeout ends what the hook started too (an ssh, a sleep), not only the shell.
    const child = spawn(file!, args, { env: { ...process.env, ...options.env }, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const append = (kept: string, chunk: Buffer) => {
      const next = kept + chunk.toString('utf8');
      return next.length > keep ? next.slice(next.length - keep) : next;
    };
    child.stdout.on('data', (chunk: Buffer) => (stdout = append(stdout, chunk)));
    child.stderr.on('data', (chunk: Buffer) => (stderr = append(stderr, chunk)));
    child.stdin.on('error', () => {});
    child.stdin.end(options.input ?? '');
    const killGroup = (signal: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, signal);
      } catch {
        // Already gone.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup('SIGTERM');
      setTimeout(() => killGroup('SIGKILL'), KILL_GRACE_MS).unref();
    }, options.timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ code: null, timedOut: false, stdout, stderr, spawnError: error.message });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, timedOut, stdout, stderr });
    });
  });
}

/** The last `count` non-empty lines of what a command printed (stderr after stdout), for a report's message. */
export function lastLines(outcome: Pick<CommandOutcome, 'stdout' | 'stderr'>, count = 5): string {
  const lines = `${outcome.stdout}\n${outcome.stderr}`
    .split('\n')
    .map((line) => line.trimEnd())
    .filter((line) => line !== '');
  return lines.slice(-count).join('\n');
}

/** One sentence saying how a command ended, with its own last words. */
export function describeOutcome(what: string, outcome: CommandOutcome, timeoutMs: number): string {
  const said = lastLines(outcome);
  const tail = said ? `: ${said}` : '';
  if (outcome.spawnError) return `${what} could not start: ${outcome.spawnError}`;
  if (outcome.timedOut) return `${what} timed out after ${Math.round(timeoutMs / 1000)} s${tail}`;
  if (outcome.code === null) return `${what} was killed${tail}`;
  return `${what} exited ${outcome.code}${tail}`;
}
