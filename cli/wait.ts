import { CliError } from './errors.ts';

// `--wait`: poll until a state is reached, with a progress indicator on stderr. On a terminal a spinner with the
// current state and elapsed time redraws one line; otherwise (CI, pipes, tests) one line per state change.

export interface WaitOptions<T> {
  /** What is being waited for, e.g. `instance i-123`. */
  label: string;
  poll: () => Promise<T>;
  /** `done` ends the wait, `failed` ends it with an error, `waiting` polls again. */
  check: (value: T) => 'done' | 'failed' | 'waiting';
  /** The state shown next to the spinner, e.g. `Provisioning`. */
  describe: (value: T) => string;
  timeoutMs: number;
  intervalMs?: number;
  stream?: NodeJS.WritableStream & { isTTY?: boolean };
}

const frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Poll interval; FLEETWARD_POLL_MS shortens it (tests against a fast simulator). */
export const defaultIntervalMs = () => Number(process.env.FLEETWARD_POLL_MS ?? 1000);

export async function waitFor<T>(options: WaitOptions<T>): Promise<T> {
  const stream = options.stream ?? process.stderr;
  const tty = stream.isTTY === true;
  const interval = options.intervalMs ?? defaultIntervalMs();
  const started = Date.now();
  let frame = 0;
  let lastState: string | undefined;
  let spinner: NodeJS.Timeout | undefined;
  let current = 'starting';

  const draw = () => stream.write(`\r\x1b[2K${frames[frame++ % frames.length]} ${options.label}: ${current} (${seconds(Date.now() - started)})`);
  if (tty) spinner = setInterval(draw, 100);
  const finish = (text: string) => {
    if (spinner) clearInterval(spinner);
    spinner = undefined;
    stream.write(`${tty ? '\r\x1b[2K' : ''}${text}\n`);
  };

  try {
    for (;;) {
      const value = await options.poll();
      current = options.describe(value);
      const verdict = options.check(value);
      if (!tty && verdict === 'waiting' && current !== lastState) stream.write(`… ${options.label}: ${current} (${seconds(Date.now() - started)})\n`);
      lastState = current;
      if (verdict === 'done') {
        finish(`✓ ${options.label}: ${current} after ${seconds(Date.now() - started)}`);
        return value;
      }
      if (verdict === 'failed') {
        finish(`✗ ${options.label}: ${current} after ${seconds(Date.now() - started)}`);
        throw new CliError(`${options.label} ended ${current}`);
      }
      if (Date.now() - started > options.timeoutMs) {
        finish(`✗ ${options.label}: still ${current} after ${seconds(Date.now() - started)}`);
        throw new CliError(`gave up waiting for ${options.label} after ${seconds(options.timeoutMs)} (still ${current})`);
      }
      await sleep(interval);
    }
  } catch (error) {
    if (spinner) {
      clearInterval(spinner);
      stream.write('\r\x1b[2K');
    }
    throw error;
  }
}
