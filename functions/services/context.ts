import type { SiteConfig } from '#config/site-config.ts';
import type { CleanupTimings } from '#domain/cleanup.ts';
import type { CreateOutcome } from '#domain/instances.ts';
import type { DeleteOutcome } from '#domain/cleanup.ts';
import type { Clock, IdSource } from '#domain/model.ts';
import type { FleetStore } from '#store/fleet-store.ts';
import type { EventPublisher } from './events.ts';

/** The site agent as the reconcilers need it; functions/site/agent-client.ts is the HTTP implementation. */
export interface SiteAgent {
  create(request: { name: string; machineId: string; instanceId: string; clientToken: string }): Promise<CreateOutcome>;
  delete(name: string): Promise<DeleteOutcome>;
}

export interface Log {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** Everything a command or reconciler needs, injected so tests can swap the clock, ids and agent. */
export interface AppContext {
  store: FleetStore;
  config: SiteConfig;
  clock: Clock;
  ids: IdSource;
  agent: SiteAgent;
  events: EventPublisher;
  log: Log;
  cleanupTimings: CleanupTimings;
}

export const heartbeatTimeoutMs = (config: SiteConfig): number => config.heartbeat.timeout_seconds * 1000;
