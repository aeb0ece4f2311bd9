import type { ScheduleTimer } from './schedule-timer.ts';
import type { SiteSimulator } from './site-agent/simulator.ts';
import type { StreamFailureEntry } from './stream-failure-destination.ts';
import type { StreamPoller } from './stream-poller.ts';

/**
 * What the local site has done since it started, counted where it happens. A test that must show that an action
 * changed nothing waits for work it can count (a sweep that began after the action, and finished) instead of
 * sleeping; GET /health shows the same figures.
 */
export interface RunnerCounters {
  /**
   * Runs of the sweep, scheduled or follow-up, numbered from 1 as they begin. `latestSwept` is the highest number of
   * a run that ended having swept (not turned away by the sweep's lease). Runs that sweep never overlap, the lease
   * sees to that, so once `latestSwept` passes `started` as read before an action, a whole sweep began after it.
   */
  sweeps: { started: number; completed: number; failed: number; latestSwept: number };
  /** Stream handler calls, one batch each; `handled` counts those that ended, whatever came of them. */
  streamBatches: { started: number; handled: number };
  /** `expired`: older than the mapping's maximum record age, never delivered. */
  streamRecords: { delivered: number; filteredOut: number; setAside: number; expired: number };
  /** What the stream's on-failure destination got (the stack's StreamFailures queue): how many entries, and the last. */
  streamFailureDestination: { entries: number; last?: StreamFailureEntry };
  /** API function invocations that answered, by route key (`GET /admin/machines/{id}/history`). */
  apiRequests: Record<string, number>;
  siteAgent: { heartbeatsSent: number; cleanupReportsSent: number; createsReceived: number };
}

export interface CountedParts {
  timer: ScheduleTimer;
  /** The number of the latest sweep run that ended having swept. */
  latestSweptRun: () => number;
  /** Null when the site runs without one. */
  poller: StreamPoller | null;
  simulator: SiteSimulator;
  apiRequests: ReadonlyMap<string, number>;
}

export function countersOf({ timer, latestSweptRun, poller, simulator, apiRequests }: CountedParts): RunnerCounters {
  const sweeps = timer.stats();
  const stream = poller?.stats();
  const lastFailure = poller?.failures().at(-1);
  const agent = simulator.counters();
  return {
    sweeps: { started: sweeps.started, completed: sweeps.ticks, failed: sweeps.failures, latestSwept: latestSweptRun() },
    streamBatches: { started: stream?.invocations ?? 0, handled: stream?.handled ?? 0 },
    streamRecords: {
      delivered: stream?.delivered ?? 0,
      filteredOut: stream?.filteredOut ?? 0,
      setAside: stream?.setAside ?? 0,
      expired: stream?.expired ?? 0,
    },
    streamFailureDestination: { entries: stream?.failureEntries ?? 0, ...(lastFailure ? { last: lastFailure } : {}) },
    apiRequests: Object.fromEntries(apiRequests),
    siteAgent: { heartbeatsSent: agent.heartbeatsSent, cleanupReportsSent: agent.cleanupReportsSent, createsReceived: agent.createsReceived },
  };
}
