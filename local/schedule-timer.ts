/**
 * The local stand-in for the EventBridge schedule that drives the sweep. By default it never runs two ticks at once:
 * locally they would share one process and one DynamoDB Local, and a sweep that outlasts the interval is better
 * skipped than stacked. With `overlap` it behaves as EventBridge and Lambda can: a firing starts a tick whatever is
 * still running, and some firings start twice (an invocation delivered again, or retried after its first failed).
 */

export interface ScheduleTimerOptions {
  intervalMs: number;
  /** One run; `run` is its number among the ticks begun (ScheduleTimerStats.started once it began). */
  tick: (run: number) => Promise<unknown>;
  /** Asked after each tick: true runs the next tick at once (a sweep handing its unfinished work to a follow-up). */
  runAgainAtOnce?: () => boolean;
  /** Tick once right away at start instead of waiting a full interval. Default false. */
  immediate?: boolean;
  /** Names the timer in log lines. Default "schedule". */
  name?: string;
  log?: (line: string) => void;
  now?: () => number;
  /** Start ticks while others still run; `twice()` says whether a firing starts a second tick alongside its first. */
  overlap?: { twice: () => boolean };
}

export interface ScheduleTimerStats {
  /** Ticks that began, numbered from 1 (the number each tick is given). Without `overlap` they never overlap. */
  started: number;
  /** Ticks that finished, failed or not. */
  ticks: number;
  failures: number;
  /** Interval firings dropped because the previous tick was still running (never with `overlap`). */
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
  // Ticks in flight, each under a key of its own: a tick leaves the map before it may fire the next.
  const inFlight = new Map<symbol, Promise<void>>();

  function fire(): void {
    if (!options.overlap && inFlight.size > 0) {
      counters.skipped++;
      return;
    }
    begin();
    if (options.overlap?.twice()) begin();
  }

  function begin(): void {
    const startedAt = now();
    const run = ++counters.started;
    counters.lastTickAt = startedAt;
    const key = Symbol(`${name} tick ${run}`);
    let ended = false;
    const ticking = (async () => {
      try {
        await options.tick(run);
      } catch (error) {
        counters.failures++;
        counters.lastError = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        log(`${name}: tick failed, next one in ${options.intervalMs} ms: ${counters.lastError}`);
      } finally {
        counters.ticks++;
        counters.lastDurationMs = now() - startedAt;
        inFlight.delete(key);
        ended = true;
      }
      // Not once stopped: stop() waits for the tick in flight, and nothing may start after it.
      if (interval !== undefined && options.runAgainAtOnce?.()) fire();
    })();
    // A tick that throws before its first await has ended already.
    if (!ended) inFlight.set(key, ticking);
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
      // A tick that ends meanwhile may not start another (interval is unset), so the set only shrinks.
      while (inFlight.size > 0) await Promise.all(inFlight.values());
    },

    running() {
      return interval !== undefined;
    },

    stats() {
      return { ...counters };
    },
  };
}
