// A simulated site agent for the local runner: it creates and sanitizes "machines" on timers, sends the
// controller heartbeats and cleanup reports, and can be told to misbehave through /_sim/* so the create-retry rule
// and the heartbeat timeout can be exercised end to end. Its parts: what it holds (agent-state.ts), the API the
// controller calls (agent-api.ts), what it does on timers (agent-loops.ts) and the test controls (sim-controls.ts).

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock, type Clock } from '#domain/core/model.ts';
import type { SigningKey } from '#site/request-signing.ts';
import { RequestBodyError } from '../request-body.ts';
import { createAgentApi } from './agent-api.ts';
import { createAgentLoops, type AgentLoopCounters } from './agent-loops.ts';
import { createAgentState } from './agent-state.ts';
import type { SimulatedMachine } from './demo-fleet.ts';
import { createSimControls, type AgentBehaviour, type ControlResponse } from './sim-controls.ts';
import { errorText, sendJson } from './wire.ts';

export interface SiteSimulatorOptions {
  machines: SimulatedMachine[];
  /** A function because the controller's port may only be known after the simulator starts. */
  controllerUrl: () => string;
  /** Bearer token with role `site-agent`. */
  token: () => Promise<string>;
  /** The keys it accepts a call signed with (a rotation holds two); `/_sim/keys` adds and removes them later. */
  signingKeys: readonly SigningKey[];
  heartbeatIntervalMs: number;
  /** Send the roster in this many parts a beat, as an agent whose roster outgrows one beat does. Default 1. */
  heartbeatParts?: number;
  provisionMs: number;
  cleanupMs: number;
  /** How long a machine's maintenance work takes. Default 200. */
  maintenanceMs?: number;
  /** How long a validation takes before the agent reports it. Default 200. */
  validationMs?: number;
  log?: (line: string) => void;
  clock?: Clock;
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Delays between attempts at a cleanup report the controller did not take. */
  reportRetryDelaysMs?: number[];
  /**
   * Keep the agent's instances in this file, so that they outlive the runner as a real agent's do (see
   * agent-state.ts). In memory only when absent.
   */
  stateFile?: string;
}

export interface SiteSimulator {
  /** Takes its port and answers the agent API, beating nothing yet: its URL is then known and cannot be taken. */
  listen(): Promise<void>;
  /** Listens, if not yet, and starts beating and working. */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Base URL of the agent API; known once listen() or start() has resolved. */
  readonly url: string;
  running(): boolean;
  /** What the agent has sent and what is still to come: a test sees from them that a stopped agent is quiet. */
  counters(): AgentLoopCounters & { createsReceived: number };
  /** The /_sim/* routes, for a runner that wants to expose them on its own port. Undefined when not a /_sim route. */
  control(method: string, path: string, body: unknown): Promise<ControlResponse | undefined>;
  /** Same as control() for a node:http request; false when the path is not a /_sim route (nothing was answered). */
  handleControl(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
}

export function createSiteSimulator(options: SiteSimulatorOptions): SiteSimulator {
  const clock = options.clock ?? systemClock;
  const log = options.log ?? (() => {});
  const machineIds = new Set(options.machines.map((m) => m.id));
  const state = createAgentState(machineIds, options.stateFile);
  const behaviour: AgentBehaviour = {
    createFaults: [],
    powerFaults: [],
    validationOutcomes: new Map(),
    cleanupFaults: [],
    maintenanceFaults: [],
    silencedMachines: new Set(),
    acceptedKeys: new Map(options.signingKeys.map((key) => [key.id, key])),
    requestLog: [],
  };
  const loops = createAgentLoops({
    roster: () =>
      options.machines
        .filter((m) => !behaviour.silencedMachines.has(m.id))
        .map((m) => {
          const alerts = state.alertsOf(m.id);
          return alerts ? { id: m.id, alerts } : { id: m.id };
        }),
    controllerUrl: options.controllerUrl,
    token: options.token,
    heartbeatIntervalMs: options.heartbeatIntervalMs,
    ...(options.heartbeatParts ? { heartbeatParts: options.heartbeatParts } : {}),
    cleanupMs: options.cleanupMs,
    maintenanceMs: options.maintenanceMs ?? 200,
    reportRetryDelaysMs: options.reportRetryDelaysMs ?? [500, 1000, 2000, 4000],
    log,
  });
  const api = createAgentApi({ state, behaviour, loops, provisionMs: options.provisionMs, validationMs: options.validationMs ?? 200, clock, log });
  const controls = createSimControls(machineIds, state, behaviour, log);
  let server: Server | undefined;
  let baseUrl: string | undefined;

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (await controls.handleControl(req, res)) return;
    await api.serve(req, res);
  }

  return {
    get url() {
      if (!baseUrl) throw new Error('site simulator: url is known once listen() or start() has resolved');
      return baseUrl;
    },
    running: () => loops.running(),
    counters: () => ({ ...loops.counters(), createsReceived: behaviour.requestLog.filter((r) => r.kind === 'create').length }),
    control: controls.control,
    handleControl: controls.handleControl,

    async listen() {
      if (server) return;
      const srv = createServer((req, res) => {
        route(req, res).catch((error: unknown) => {
          if (error instanceof RequestBodyError) return sendJson(res, error.status, { code: error.code, message: error.message });
          log(`site-sim: ${req.method} ${req.url} failed: ${errorText(error)}`);
          if (!res.headersSent) sendJson(res, 500, { code: 'internal', message: errorText(error) });
          else res.destroy();
        });
      });
      await new Promise<void>((resolve, reject) => {
        srv.once('error', reject);
        srv.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
          srv.off('error', reject);
          resolve();
        });
      });
      server = srv;
      const { address, port } = srv.address() as AddressInfo;
      baseUrl = `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
      log(`site-sim: agent listening on ${baseUrl} with ${options.machines.length} machines`);
    },

    async start() {
      if (loops.running()) return;
      await this.listen();
      loops.start();
    },

    async stop() {
      if (!server) return;
      const stopped = loops.stop();
      api.closeHeldOpen();
      const srv = server;
      server = undefined;
      const closed = new Promise<void>((resolve) => srv.close(() => resolve()));
      srv.closeAllConnections();
      await closed;
      await stopped;
    },
  };
}
