// The site agent's HTTP contract (API.md "Site agent"), in one place for both sides: the controller's client
// (agent-client.ts) and the local simulated agent (local/site-agent/) parse and build with these schemas.
// In zod/mini, as the client is in every function (config/zod-messages.ts); the controller's routes for what the agent
// posts validate with the same shapes in zod's classic API (schemas.ts), which the OpenAPI document is made from.

import * as z from 'zod/mini';
import '#config/zod-messages.ts';
import { ROSTER_PART_COUNTS } from '#config/roster-parts.ts';
import { machineIdRule } from '#site/machine-id.ts';

const text = (min: number, max: number) => z.string().check(z.minLength(min), z.maxLength(max));
const name = text(1, 256);
const machineId = z.string().check(z.regex(machineIdRule.pattern, machineIdRule.message));

export const agentPaths = {
  instances: '/instances',
  instance: (siteName: string) => `/instances/${encodeURIComponent(siteName)}`,
  machineMaintenance: (machineId: string) => `/machines/${encodeURIComponent(machineId)}/maintenance`,
  validation: (machineId: string) => `/machines/${encodeURIComponent(machineId)}/validation`,
  power: (siteName: string) => `/instances/${encodeURIComponent(siteName)}/power`,
} as const;

/** POST {agent}/machines/{id}/maintenance: do a maintenance's work on the machine and report it (202). */
export const startMaintenanceRequest = z.strictObject({
  maintenanceId: text(1, 128),
  category: z.enum(['firmware', 'hardware', 'network', 'facility', 'other']),
});
export type StartMaintenanceRequest = z.infer<typeof startMaintenanceRequest>;

export const powerActions = ['cycle', 'off', 'on'] as const;

/** POST {agent}/instances/{name}/power (202). */
export const powerRequest = z.strictObject({ action: z.enum(powerActions) });
export type PowerRequest = z.infer<typeof powerRequest>;

/** POST {agent}/machines/{id}/validation: run the suite on the machine and report it under `validationId` (202). */
export const validationRequest = z.strictObject({
  validationId: text(1, 128),
  suite: text(1, 100),
  reason: z.enum(['repair', 'maintenance', 'registration', 'provider']),
});
export type ValidationRequest = z.infer<typeof validationRequest>;

/** One test of a validation as the agent reports it. */
export const validationResult = z.strictObject({ test: text(1, 128), passed: z.boolean(), message: z.optional(text(0, 1024)) });

/** POST /site/v1/machines/{id}/validation: the agent's report of a validation it was asked for. */
export const validationReport = z.strictObject({
  validationId: text(1, 128),
  passed: z.boolean(),
  // Bounded so that the machine's record, which keeps them, stays far below DynamoDB's item size.
  results: z.array(validationResult).check(z.maxLength(64)),
});
export type ValidationReportBody = z.infer<typeof validationReport>;

/** POST {agent}/instances. `clientToken` is the same on every attempt of one create. */
export const createInstanceRequest = z.strictObject({
  name,
  machineId,
  instanceId: text(1, 128),
  clientToken: text(1, 256),
});
export type CreateInstanceRequest = z.infer<typeof createInstanceRequest>;

/** 201 to a create; 202 to DELETE {agent}/instances/{name}. */
export const instanceAnswer = z.object({ name, machineId });
export type InstanceAnswer = z.infer<typeof instanceAnswer>;

/** Any 4xx/5xx answer of the agent, e.g. 409 `name_conflict`. */
export const agentErrorAnswer = z.object({ code: z.string(), message: z.optional(z.string()) });
export type AgentErrorAnswer = z.infer<typeof agentErrorAnswer>;

export const instanceStates = ['present', 'cleaning'] as const;

/** 200 to GET {agent}/instances/{name}; 404 means absent. */
export const instanceStatusAnswer = z.strictObject({ state: z.enum(instanceStates) });
export type InstanceStatusAnswer = z.infer<typeof instanceStatusAnswer>;

export const alertClassifications = ['PreventAllocations', 'SuppressExternalAlerting', 'PreventInstanceDeletion'] as const;

/** One health alert the agent reports about a machine (its health probes). Only `PreventAllocations` ones quarantine it. */
export const agentAlert = z.strictObject({
  id: text(1, 128),
  message: text(0, 4096),
  classifications: z.array(z.enum(alertClassifications)).check(z.maxLength(alertClassifications.length)),
});
export type AgentAlertBody = z.infer<typeof agentAlert>;

/** Everything the agent reports about one machine at once. */
export const machineAlerts = z.array(agentAlert).check(z.maxLength(64));

/**
 * The most bytes one heartbeat's body may have: what the controller stores of a beat (the ids, the bounded
 * alerts) is never larger than the body, so a beat this size commits its changed roster buckets in one DynamoDB
 * transaction (4 MB). 100,000 machines with ids of 25 characters fit; docs/api.md says what a site beyond it does.
 */
export const HEARTBEAT_MAX_BODY_BYTES = 3.5 * 1024 * 1024;

/** POST /site/v1/heartbeats: every machine the agent sees, with what it alerts on. */
export const heartbeatBody = z.strictObject({
  machines: z.array(z.strictObject({ id: machineId, alerts: z.optional(machineAlerts) })).check(z.maxLength(100_000)),
  /** One part of a roster too large for one beat (domain/machines/heartbeat.ts RosterPart); the whole roster when absent. */
  part: z.optional(
    z
      .strictObject({ index: z.int().check(z.minimum(0)), count: z.union(ROSTER_PART_COUNTS.map((n) => z.literal(n))) })
      .check(z.refine((p) => p.index < p.count, { message: 'index must be below count', path: ['index'] })),
  ),
});
export type HeartbeatBody = z.infer<typeof heartbeatBody>;

/** POST /site/v1/machines/{id}/cleanup. */
export const cleanupReport = z.strictObject({
  ok: z.boolean(),
  message: z.optional(text(0, 4096)),
});
export type CleanupReport = z.infer<typeof cleanupReport>;
