// What the simulated agent holds: its instances, those it is cleaning, and what its health probes report, kept in a
// file when asked so that they outlive the runner as a real agent's do.

import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createInstanceRequest, machineAlerts, type AgentAlertBody, type CreateInstanceRequest, type InstanceStatusAnswer } from '#site/agent-contract.ts';

export type AgentInstance = CreateInstanceRequest;

export interface AgentState {
  /** Holds the instance from now on (a create, or a gateway error's residue), under its name and client token. */
  register(instance: AgentInstance): void;
  has(name: string): boolean;
  /** The instance a client token created, while it is present. */
  byClientToken(clientToken: string): AgentInstance | undefined;
  /** Moves a present instance to cleaning; undefined when it is not present. */
  startCleanup(name: string): AgentInstance | undefined;
  /** The instance under cleanup by that name, if any. */
  cleaning(name: string): AgentInstance | undefined;
  /** The cleanup of `instance` is over (reported or given up): the agent no longer answers for it. */
  endCleanup(name: string, instance: AgentInstance): void;
  /** A name that was deleted and created again is the new, present instance. */
  statusOf(name: string): InstanceStatusAnswer['state'] | undefined;
  alertsOf(machineId: string): AgentAlertBody[] | undefined;
  /** An empty list clears what the probes report. */
  setAlerts(machineId: string, alerts: AgentAlertBody[]): void;
}

interface SavedState {
  instances: AgentInstance[];
  cleaning: AgentInstance[];
  /** Absent in a file an older agent wrote. */
  health?: Record<string, AgentAlertBody[]>;
}

/** `machineIds`: the agent's roster; alerts a file kept for other machines are dropped. */
export function createAgentState(machineIds: ReadonlySet<string>, stateFile?: string): AgentState {
  const instances = new Map<string, AgentInstance>();
  // Deleted and not yet reported clean: the agent still answers for them (GET says cleaning, DELETE is a no-op).
  const cleaning = new Map<string, AgentInstance>();
  const nameByToken = new Map<string, string>();
  // Sent with every heartbeat until changed.
  const health = new Map<string, AgentAlertBody[]>();

  /** Written whole and renamed into place, so a runner killed mid-write leaves the previous state, never half of one. */
  function save(): void {
    if (!stateFile) return;
    const state: SavedState = { instances: [...instances.values()], cleaning: [...cleaning.values()], health: Object.fromEntries(health) };
    writeFileSync(`${stateFile}.tmp`, JSON.stringify(state));
    renameSync(`${stateFile}.tmp`, stateFile);
  }

  function register(instance: AgentInstance): void {
    instances.set(instance.name, instance);
    nameByToken.set(instance.clientToken, instance.name);
    save();
  }

  const saved = stateFile ? loadState(stateFile) : undefined;
  for (const [id, alerts] of Object.entries(saved?.health ?? {})) if (machineIds.has(id)) health.set(id, alerts);
  for (const instance of saved?.instances ?? []) register(instance);

  return {
    register,
    has: (name) => instances.has(name),
    byClientToken(clientToken) {
      const name = nameByToken.get(clientToken);
      return name === undefined ? undefined : instances.get(name);
    },
    startCleanup(name) {
      const instance = instances.get(name);
      if (!instance) return undefined;
      instances.delete(name);
      if (nameByToken.get(instance.clientToken) === name) nameByToken.delete(instance.clientToken);
      cleaning.set(name, instance);
      save();
      return instance;
    },
    cleaning: (name) => cleaning.get(name),
    endCleanup(name, instance) {
      if (cleaning.get(name) === instance) cleaning.delete(name);
      save();
    },
    statusOf: (name) => (instances.has(name) ? 'present' : cleaning.has(name) ? 'cleaning' : undefined),
    alertsOf: (machineId) => health.get(machineId),
    setAlerts(machineId, alerts) {
      if (alerts.length === 0) health.delete(machineId);
      else health.set(machineId, alerts);
      save();
    },
  };
}

/**
 * What a previous run of the agent left: its instances and what its health probes report. A real agent is its own
 * process and lives through a crash of the controller: the cleanups it had under way finished meanwhile, and their
 * reports, posted to a controller that was down, were lost. So those instances are simply gone now, and the
 * controller has to ask (GET) to find out.
 */
function loadState(stateFile: string): { instances: AgentInstance[]; health: Record<string, AgentAlertBody[]> } {
  let text: string;
  try {
    text = readFileSync(stateFile, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { instances: [], health: {} };
    throw error;
  }
  const state = JSON.parse(text) as SavedState;
  return {
    instances: state.instances.map((instance) => createInstanceRequest.parse(instance)),
    health: Object.fromEntries(Object.entries(state.health ?? {}).map(([id, alerts]) => [id, machineAlerts.parse(alerts)])),
  };
}
