// What the simulated agent does by itself, on timers: its heartbeats, the machines it sanitizes and the cleanup
// reports it posts, and the provisioning delay of a create. stop() cancels every timer and outbound call.

import { bucketInPart, bucketOf } from '#domain/machines/heartbeat.ts';
import type { CleanupReport, HeartbeatBody, ValidationReportBody } from '#site/agent-contract.ts';
import type { AgentInstance } from './agent-state.ts';
import { errorText } from './wire.ts';

/** How long the agent waits for the controller to answer a heartbeat or a cleanup report. */
export const CONTROLLER_CALL_TIMEOUT_MS = 10_000;

export interface AgentLoopsOptions {
  /** The roster as of now: each machine the agent sees, with what its probes report. */
  roster: () => HeartbeatBody['machines'];
  /** A function because the controller's port may only be known after the agent starts. */
  controllerUrl: () => string;
  /** Bearer token with role `site-agent`. */
  token: () => Promise<string>;
  heartbeatIntervalMs: number;
  /** Send the roster in this many parts a beat, as an agent whose roster outgrows one beat does. Default 1. */
  heartbeatParts?: number;
  cleanupMs: number;
  /** How long a machine's maintenance work takes (`[simulator] maintenance_ms`). */
  maintenanceMs: number;
  /** Delays between attempts at a cleanup report the controller did not take. */
  reportRetryDelaysMs: number[];
  log: (line: string) => void;
}

export interface AgentLoopCounters {
  /** Heartbeats (or parts of one) the controller answered, whatever it answered. */
  heartbeatsSent: number;
  /** Cleanup reports the controller took. */
  cleanupReportsSent: number;
  /** Validation reports the controller took. */
  validationReportsSent: number;
  /** Timers that will still fire: provisioning, cleanup, the next beat, a report's retry. */
  timersPending: number;
  /** Calls to the controller not yet answered. */
  callsInFlight: number;
}

export interface AgentLoops {
  start(): void;
  /** Cancels every timer and call in flight and waits for the heartbeat loop to end. */
  stop(): Promise<void>;
  running(): boolean;
  /** A delay that stop() cancels: resolves false when cancelled. Asked for before the start, it counts from the start. */
  wait(ms: number): Promise<boolean>;
  /** Sanitizes the machine for `cleanupMs`, then reports `report` and calls `done`; nothing when stopped before it is clean. */
  cleanUp(instance: AgentInstance, report: CleanupReport, done: () => void): void;
  /** Works on the machine for `maintenanceMs`, then reports the work done; nothing when stopped before. */
  maintain(machineId: string, maintenanceId: string): void;
  /** Validates the machine for `delayMs`, then reports `report`; nothing when stopped before. */
  validate(machineId: string, report: ValidationReportBody, delayMs: number): void;
  counters(): AgentLoopCounters;
}

export function createAgentLoops(options: AgentLoopsOptions): AgentLoops {
  const { log } = options;
  const timers = new Set<NodeJS.Timeout>();
  let outbound = new AbortController();
  let isRunning = false;
  let stopped = false;
  // Work the agent took before it started (it listens first) waits for the start, as a real agent's queue would.
  let markStarted: () => void = () => {};
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  let heartbeatLoop: Promise<void> | undefined;
  const counters = { heartbeatsSent: 0, cleanupReportsSent: 0, validationReportsSent: 0, callsInFlight: 0 };

  async function wait(ms: number): Promise<boolean> {
    if (!isRunning && !stopped) await started;
    return new Promise((resolve) => {
      if (!isRunning) return resolve(false);
      const signal = outbound.signal;
      const timer = setTimeout(() => {
        timers.delete(timer);
        signal.removeEventListener('abort', onAbort);
        resolve(true);
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        timers.delete(timer);
        resolve(false);
      };
      timers.add(timer);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  async function postToController(path: string, body: unknown): Promise<Response> {
    counters.callsInFlight++;
    try {
      const token = await options.token();
      const response = await fetch(`${options.controllerUrl().replace(/\/+$/, '')}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
        signal: AbortSignal.any([outbound.signal, AbortSignal.timeout(CONTROLLER_CALL_TIMEOUT_MS)]),
      });
      await response.body?.cancel();
      return response;
    } finally {
      counters.callsInFlight--;
    }
  }

  async function sendHeartbeat(): Promise<void> {
    const machines = options.roster();
    const count = options.heartbeatParts ?? 1;
    if (count === 1) return sendBeat({ machines });
    for (let index = 0; index < count; index++) {
      const part = { index, count };
      await sendBeat({ machines: machines.filter((m) => bucketInPart(bucketOf(m.id), part)), part: part as HeartbeatBody['part'] });
    }
  }

  async function sendBeat(body: HeartbeatBody): Promise<void> {
    try {
      const response = await postToController('/site/v1/heartbeats', body);
      counters.heartbeatsSent++;
      if (!response.ok) log(`site-sim: heartbeat answered ${response.status}`);
    } catch (error) {
      if (isRunning) log(`site-sim: heartbeat failed: ${errorText(error)}`);
    }
  }

  // Sequential on purpose: the controller treats each heartbeat as the whole roster (or part), so two must never race.
  async function runHeartbeats(): Promise<void> {
    do {
      await sendHeartbeat();
    } while (await wait(options.heartbeatIntervalMs));
  }

  /** Posts a report about a machine (cleanup, maintenance or validation) until the controller takes it; true when it did. */
  async function report(kind: 'cleanup' | 'maintenance' | 'validation', machineId: string, body: unknown): Promise<boolean> {
    const path = `/site/v1/machines/${encodeURIComponent(machineId)}/${kind}`;
    for (let attempt = 0; ; attempt++) {
      if (!isRunning) return false;
      try {
        const response = await postToController(path, body);
        if (response.ok) return true;
        // A 4xx will not heal by asking again; only an unwell controller is worth retrying.
        if (response.status < 500) {
          log(`site-sim: controller refused the ${kind} report for ${machineId}: ${response.status}`);
          return false;
        }
        log(`site-sim: ${kind} report for ${machineId} answered ${response.status}`);
      } catch (error) {
        if (!isRunning) return false;
        log(`site-sim: ${kind} report for ${machineId} failed: ${errorText(error)}`);
      }
      const delay = options.reportRetryDelaysMs[attempt];
      if (delay === undefined) {
        log(`site-sim: giving up on the ${kind} report for ${machineId}`);
        return false;
      }
      if (!(await wait(delay))) return false;
    }
  }

  async function reportCleanup(instance: AgentInstance, cleanup: CleanupReport): Promise<void> {
    if (!(await report('cleanup', instance.machineId, cleanup))) return;
    counters.cleanupReportsSent++;
    log(`site-sim: reported cleanup of ${instance.machineId} (${instance.name}): ok=${cleanup.ok}`);
  }

  return {
    wait,
    running: () => isRunning,
    counters: () => ({ ...counters, timersPending: timers.size }),

    cleanUp(instance, cleanup, done) {
      void (async () => {
        if (!(await wait(options.cleanupMs))) return;
        await reportCleanup(instance, cleanup);
        done();
      })();
    },

    maintain(machineId, maintenanceId) {
      void (async () => {
        if (!(await wait(options.maintenanceMs))) return;
        if (await report('maintenance', machineId, { maintenanceId, ok: true })) log(`site-sim: reported maintenance ${maintenanceId} of ${machineId}: ok`);
      })();
    },

    validate(machineId, validation, delayMs) {
      void (async () => {
        if (!(await wait(delayMs))) return;
        if (!(await report('validation', machineId, validation))) return;
        counters.validationReportsSent++;
        log(`site-sim: reported validation ${validation.validationId} of ${machineId}: passed=${validation.passed}`);
      })();
    },

    start() {
      if (isRunning) return;
      outbound = new AbortController();
      isRunning = true;
      stopped = false;
      heartbeatLoop = runHeartbeats();
      markStarted();
    },

    async stop() {
      isRunning = false;
      stopped = true;
      markStarted();
      outbound.abort();
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await heartbeatLoop;
      heartbeatLoop = undefined;
    },
  };
}
