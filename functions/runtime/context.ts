import type { SiteConfig } from '#config/site-config.ts';
import { cleanupTimings, type CleanupTimings } from '#domain/instances/cleanup.ts';
import type { CreateOutcome } from '#domain/instances/instances.ts';
import type { DeleteOutcome } from '#domain/instances/cleanup.ts';
import type { InstanceStatusOutcome } from '#domain/instances/status-checks.ts';
import type { ValidationCallOutcome, ValidationRules } from '#domain/repair/validation.ts';
import type { PowerRequest, ValidationRequest } from '#site/agent-contract.ts';
import type { PowerCallOutcome, PowerRules } from '#domain/instances/power.ts';
import type { Clock, IdSource } from '#domain/core/model.ts';
import type { FleetStore } from '#store/port.ts';
import type { StartMaintenanceRequest } from '#site/agent-contract.ts';
import type { SafetyRules } from '#domain/repair/safety.ts';
import type { EventPublisher } from '#runtime/events.ts';
import type { Dimensions, MetricName } from '#runtime/metric-catalog.ts';

/** The site agent as the reconcilers need it; functions/site/agent-client.ts is the HTTP implementation. */
export interface SiteAgent {
  create(request: { name: string; machineId: string; instanceId: string; clientToken: string }, call?: AgentCall): Promise<CreateOutcome>;
  delete(name: string, call?: AgentCall): Promise<DeleteOutcome>;
  /** Where the agent stands with an instance, asked when the outcome of a create or a cleanup was lost. */
  status(name: string, call?: AgentCall): Promise<InstanceStatusOutcome>;
  /** Ask for a maintenance's work on a machine: accepted (the agent reports later), refused, or no answer (ask again). */
  startMaintenance(machineId: string, request: StartMaintenanceRequest, call?: AgentCall): Promise<MaintenanceStartOutcome>;
  /** Ask the agent to validate a machine (it reports through the API later). */
  validate(machineId: string, request: ValidationRequest, call?: AgentCall): Promise<ValidationCallOutcome>;
  /** Ask for a power action on an instance (by its site name): accepted, refused, or no answer (ask again). */
  power(name: string, request: PowerRequest, call?: AgentCall): Promise<PowerCallOutcome>;
}

export type MaintenanceStartOutcome = { kind: 'accepted' } | { kind: 'refused'; reason: string } | { kind: 'error'; reason: string };

export interface Log {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** Operational figures (metric-catalog.ts): Powertools metrics (EMF) in AWS, kept in memory and scraped locally. */
export interface Metrics {
  gauge(name: MetricName, value: number, dimensions?: Dimensions): void;
  count(name: MetricName, value: number, dimensions?: Dimensions): void;
  timing(name: MetricName, ms: number, dimensions?: Dimensions): void;
}

/** Who asked: the API request a command or a reaction works for; logs, agent calls, records and events carry it. */
export interface AgentCall {
  requestId?: string | undefined;
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
  /** The API request this context works for (see request-scope.ts); absent for the sweep's own work. */
  requestId?: string;
  /** When that request must have answered (epoch ms, wall clock): work that can stop early stops before it. */
  deadline?: number;
}

export const siteCleanupTimings = (config: SiteConfig): CleanupTimings => cleanupTimings(config.site_agent.report_timeout_seconds * 1000);

/** The site's validation rules; a call to the agent is claimed for as long as one create attempt may take, and some. */
export const validationRules = (config: SiteConfig): ValidationRules => ({
  after: config.validation.after,
  suite: config.validation.suite,
  timeoutMs: config.validation.timeout_minutes * 60_000,
  callLeaseMs: config.instance_create_retry.timeout_ms + 5_000,
});

/** A power call is claimed for as long as one agent call may take, and some; an action is given up after 5 calls. */
export const powerRules = (config: SiteConfig): PowerRules => ({ callLeaseMs: config.instance_create_retry.timeout_ms + 5_000, maxAttempts: 5 });

export const heartbeatTimeoutMs = (config: SiteConfig): number => config.heartbeat.timeout_seconds * 1000;

export const safetyRules = (config: SiteConfig): SafetyRules => ({
  maxQuarantines: config.repair_storm.max_quarantines,
  maxFraction: config.repair_storm.max_fraction,
  windowMs: config.repair_storm.window_minutes * 60_000,
  maxRepairs: config.repair_escalation.max_repairs,
  repairWindowMs: config.repair_escalation.window_days * 86_400_000,
});
