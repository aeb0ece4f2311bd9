/**
 * The local stand-in for the EventBridge schedule that drives the sweep. Unlike EventBridge + Lambda it never
 * runs two ticks at once: locally they would share one process and one DynamoDB Local, and a sweep that
 * outlasts the interval is better skipped than stacked.
 */

export interface ScheduleTimerOptions {
  intervalMs: number;
  tick: () => Promise<unknown>;
  /** Asked after each tick: true runs the next tick at once (a sweep handing its unfinished work to a follow-up). */
  runAgainAtOnce?: () => boolean;
  /** Tick once right away at start instead of waiting a full interval. Default false. */
  immediate?: boolean;
  /** Names the timer in log lines. Default "schedule". */
  name?: string;
  log?: (line: string) => void;
  now?: () => number;
}

export interface ScheduleTimerStats {
  /** Ticks that began. They never overlap: once `ticks` reaches a tick's number, that tick is over. */
  started: number;
  /** Ticks that finished, failed or not. */
  ticks: number;
  failures: number;
  /** Interval firings dropped because the previous tick was still running. */
  skipped: number;
  /** Epoch ms when the last tick began. */
  lastTickAt?: number;
  lastDurationMs?: number;
  lastError?: string;
}

export interface ScheduleTimer {
  start(): void;
  /** Stops firing and waits for a tick in flight, so nothing touches the tables afterwards. */
  stop(): Promise<void>;
  running(): boolean;
  stats(): ScheduleTimerStats;
}

export function createScheduleTimer(options: ScheduleTimerOptions): ScheduleTimer {
  if (!Number.isFinite(options.intervalMs) || options.intervalMs < 1) {
    throw new RangeError(`intervalMs must be a positive number, got ${options.intervalMs}`);
  }
  const name = options.name ?? 'schedule';
  const log = options.log ?? ((line: string) => console.log(line));
  const now = options.now ?? Date.now;
  const counters: ScheduleTimerStats = { started: 0, ticks: 0, failures: 0, skipped: 0 };
  let interval: ReturnType<typeof setInterval> | undefined;
  let inFlight: Promise<void> | undefined;

  function fire(): void {
    if (inFlight) {
      counters.skipped++;
      return;
    }
    const startedAt = now();
    counters.started++;
    counters.lastTickAt = startedAt;
    inFlight = (async () => {
      try {
        await options.tick();
      } catch (error) {
        counters.failures++;
        counters.lastError = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        log(`${name}: tick failed, next one in ${options.intervalMs} ms: ${counters.lastError}`);
      } finally {
        counters.ticks++;
        counters.lastDurationMs = now() - startedAt;
        inFlight = undefined;
      }
      // Not once stopped: stop() waits for the tick in flight, and nothing may start after it.
      if (interval !== undefined && options.runAgainAtOnce?.()) fire();
    })();
  }

  return {
    start() {
      if (interval) return;
      interval = setInterval(fire, options.intervalMs);
      if (options.immediate) fire();
    },

    async stop() {
      if (interval) clearInterval(interval);
      interval = undefined;
      await inFlight;
    },

    running() {
      return interval !== undefined;
    },

    stats() {
      return { ...counters };
    },
  };
}
