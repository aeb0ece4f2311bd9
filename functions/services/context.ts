import type { SiteConfig } from '#config/site-config.ts';
import { cleanupTimings, type CleanupTimings } from '#domain/cleanup.ts';
import type { CreateOutcome } from '#domain/instances.ts';
import type { DeleteOutcome } from '#domain/cleanup.ts';
import type { InstanceStatusOutcome } from '#domain/status-checks.ts';
import type { Clock, IdSource } from '#domain/model.ts';
import type { FleetStore } from '#store/port.ts';
import type { SafetyRules } from '#domain/safety.ts';
import type { EventPublisher } from './events.ts';

/** The site agent as the reconcilers need it; functions/site/agent-client.ts is the HTTP implementation. */
export interface SiteAgent {
  create(request: { name: string; machineId: string; instanceId: string; clientToken: string }): Promise<CreateOutcome>;
  delete(name: string): Promise<DeleteOutcome>;
  /** Where the agent stands with an instance, asked when the outcome of a create or a cleanup was lost. */
  status(name: string): Promise<InstanceStatusOutcome>;
}

export interface Log {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** Operational figures for alarms: Powertools metrics (EMF) in AWS, kept in memory locally. */
export interface Metrics {
  gauge(name: string, value: number): void;
}

/** Everything a command or reconciler needs, injected so tests can swap the clock, ids and agent. */
export interface AppContext {
  store: FleetStore;
  config: SiteConfig;
  clock: Clock;
  ids: IdSource;
  agent: SiteAgent;
  events: EventPublisher;
  metrics: Metrics;
  log: Log;
}

export const siteCleanupTimings = (config: SiteConfig): CleanupTimings => cleanupTimings(config.site_agent.report_timeout_seconds * 1000);

export const heartbeatTimeoutMs = (config: SiteConfig): number => config.heartbeat.timeout_seconds * 1000;

export const safetyRules = (config: SiteConfig): SafetyRules => ({
  maxQuarantines: config.repair_storm.max_quarantines,
  maxFraction: config.repair_storm.max_fraction,
  windowMs: config.repair_storm.window_minutes * 60_000,
  maxRepairs: config.repair_escalation.max_repairs,
  repairWindowMs: config.repair_escalation.window_days * 86_400_000,
});
