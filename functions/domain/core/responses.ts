import { alertClassifications } from '#site/agent-contract.ts';
import type { MachineState, InstanceStatus, MetaInstanceStatus } from '#domain/core/model.ts';
import { instanceStatuses, issueCategories } from '#domain/core/schemas.ts';
import {
  maintenanceCategories,
  maintenanceKinds,
  validationReasons,
  lifecycles,
  instanceHealths,
  powerResults,
  powerStates,
  replacementReasons,
  ticketActions,
  ticketStates,
} from '#domain/core/vocabulary.ts';
import { powerActions } from '#site/agent-contract.ts';
import * as z from 'zod';

// What the API answers with (API.md "Objects"). Each schema lists exactly what is exposed: a view is built by
// parsing a record through it, and unknown keys are stripped, so a field added to a record stays internal until
// it is listed here. The API types are inferred from these schemas; `componentNames` names the ones the OpenAPI
// document shows as components (the generator attaches the names, so no bundle carries it).

const labels = /* @__PURE__ */ z.record(z.string(), z.string());
const machineStates = ['Ready', 'Assigned', 'Cleanup'] as const satisfies readonly MachineState[];
const metaInstanceStatuses = ['Placing', 'Ready', 'Retrying', 'Deleting', 'Deleted'] as const satisfies readonly MetaInstanceStatus[];

export const issueResponse = /* @__PURE__ */ z.object({ category: z.enum(issueCategories), summary: z.string(), details: z.string().optional() });

export const healthAlertResponse = /* @__PURE__ */ z.object({
  id: z.string(),
  target: z.string(),
  message: z.string(),
  tenantMessage: z.string().optional(),
  classifications: z.array(z.enum(alertClassifications)),
});

export const healthOverrideResponse = /* @__PURE__ */ z.object({
  source: z.string(),
  mode: z.enum(['merge', 'replace']),
  alerts: z.array(healthAlertResponse),
  issue: issueResponse.optional(),
  createdBy: z.string(),
  createdAt: z.string(),
});

/** What an instance on a machine in declared maintenance carries: hand it back by `handBackBy`. */
export const instanceMaintenanceResponse = /* @__PURE__ */ z.object({
  id: z.string(),
  kind: z.enum(maintenanceKinds),
  category: z.enum(maintenanceCategories),
  reason: z.string(),
  impact: z.string().optional(),
  handBackBy: z.string(),
});

/** The instance's latest power action (docs/api.md "Power"). */
export const instancePowerResponse = /* @__PURE__ */ z.object({
  state: z.enum(powerStates).describe('cycling while a cycle waits for the site agent; then what the accepted action left, or the state before a failed one'),
  action: z.enum(powerActions),
  requestedAt: z.string(),
  result: z.enum(powerResults).describe('pending until the site agent accepted the action or it failed'),
  finishedAt: z.string().optional(),
  error: z.string().optional().describe('Why the action failed'),
});

export const instanceResponse = /* @__PURE__ */ z.object({
  id: z.string(),
  org: z.string(),
  name: z.string(),
  machineId: z.string(),
  machineType: z.string(),
  status: z.enum(instanceStatuses satisfies readonly InstanceStatus[]),
  labels,
  metaInstanceId: z.string().optional(),
  createAttempts: z.number().int(),
  siteName: z.string(),
  failureReason: z.string().optional(),
  terminationReason: z.string().optional(),
  maintenance: instanceMaintenanceResponse.optional(),
  power: instancePowerResponse.optional(),
  health: z.enum(instanceHealths).describe('The machine\'s health as the tenant may know it (docs/api.md "Tenant view")'),
  healthDetail: z.string().optional().describe("The alerts' tenant messages, or a generic text; never a provider's private message"),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const machineValidationResponse = /* @__PURE__ */ z.object({
  id: z.string(),
  state: z.enum(['running', 'passed', 'failed']),
  reason: z.enum(validationReasons),
  suite: z.string(),
  requestedAt: z.string(),
  finishedAt: z.string().optional(),
  results: z.array(z.object({ test: z.string(), passed: z.boolean(), message: z.string().optional() })).optional(),
  askedAt: z.string().optional().describe('When the site agent accepted the request'),
  reportDueBy: z.string().optional().describe('Its report is awaited until then; past it, ValidationStuck (once) and the agent is asked again'),
  attempts: z.number().int().describe('Calls sent to the site agent for it'),
  error: z.string().optional().describe('Why the last call to the site agent failed'),
  stuckAt: z.string().optional().describe('When it first overran timeout_minutes'),
});

const machineFields = {
  id: z.string(),
  machineType: z.string(),
  rack: z.string(),
  nvlinkDomain: z.string().optional(),
  state: z.enum(machineStates),
  instanceId: z.string().optional(),
  labels,
  healthOverrides: z.array(healthOverrideResponse),
  allocatable: z.boolean(),
  notAllocatableReasons: z.array(z.string()),
  lastHeartbeatAt: z.string().optional(),
  cleanup: z.object({ phase: z.enum(['pending', 'requested', 'failed']), attempts: z.number().int(), error: z.string().optional() }).optional(),
  validation: machineValidationResponse.optional(),
  lifecycle: z.enum(lifecycles).describe('Where the machine is in its life, derived from the record (docs/api.md "Lifecycle")'),
  retired: z.object({ at: z.string(), by: z.string(), reason: z.string() }).optional(),
  reservation: z.object({ id: z.string(), org: z.string() }).optional().describe('The reservation holding it for one org (docs/api.md "Reservations")'),
  version: z.number().int(),
};

export const machineResponse = /* @__PURE__ */ z.object(machineFields);

/** A machine as a tenant sees it: which org's reservation holds it is the provider's to know. */
export const tenantMachineResponse = /* @__PURE__ */ machineResponse.omit({ reservation: true });

/** A machine as a repair tenant finds it in a listing: whose instance or reservation it holds is not theirs to know. */
export const repairCandidateResponse = /* @__PURE__ */ z.object((({ instanceId: _hidden, reservation: _reserved, ...visible }) => visible)(machineFields));

export const metaInstanceResponse = /* @__PURE__ */ z.object({
  id: z.string(),
  org: z.string(),
  machineType: z.string(),
  minNodes: z.number().int(),
  machineIds: z.array(z.string()).optional(),
  placement: z.object({ sameRack: z.boolean(), sameNvlinkDomain: z.boolean().default(false) }),
  labels,
  status: z.enum(metaInstanceStatuses).describe('Placement: Ready once every node has a member, whatever state the members are in'),
  instanceIds: z.array(z.string()),
  readyMembers: z.number().int().describe('Members listed in instanceIds that are Ready: the meta-instance is usable whole once this reaches minNodes'),
  memberReplacements: z
    .array(
      z.object({
        instanceId: z.string(),
        reason: z.enum(replacementReasons),
        requestedAt: z.string(),
        successorId: z.string().optional().describe('The member placed first; the outgoing one is released once it is Ready'),
      }),
    )
    .optional()
    .describe('Members being replaced (docs/api.md "Replacing a member")'),
  consecutiveFailures: z.number().int(),
  lastFailureError: z.string().optional(),
  placementError: z.string().optional(),
  nextAttemptAt: z.string().optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

/** Who did what, when: the head of a machine's history entry and of an audit entry alike. */
const actionFields = { at: z.string(), actor: z.string(), action: z.string() };

export const historyEntryResponse = /* @__PURE__ */ z.object({
  machineId: z.string(),
  ...actionFields,
  instanceId: z.string().optional(),
  message: z.string().optional(),
  changes: z.record(z.string(), z.object({ from: z.unknown().optional(), to: z.unknown().optional() })).optional(),
  issue: issueResponse.optional(),
  labels: labels.optional(),
  /** An event for repair automation; the stream publishes it once this entry is committed (an outbox). */
  event: z.object({ type: z.string(), detail: z.record(z.string(), z.unknown()) }).optional(),
  /** The tenant org whose report this release is: it opens one of the org's repair tickets (docs/api.md "Repair tickets"). */
  reportingOrg: z.string().optional(),
  /** The id of the event an `event-delivered` entry reports (its detail's `id`). */
  eventId: z.string().optional(),
});

export const tenantResponse = /* @__PURE__ */ z.object({
  org: z.string(),
  capabilities: z.object({ targetedInstanceCreation: z.boolean() }),
  quotas: z.record(z.string(), z.number().int()).default({}),
  usage: z
    .record(z.string(), z.number().int())
    .optional()
    .describe("Machines of each type the org's instances hold now (Provisioning, Ready, Repairing, Terminating)"),
  updatedAt: z.string(),
});

export const repairStormResponse = /* @__PURE__ */ z.object({
  state: z.enum(['closed', 'tripped']),
  trippedAt: z.string().optional(),
  /** Machines quarantined while tripped, whose repair request was held back. */
  heldBack: z.array(z.string()),
});

const safetyFields = { repairStorm: repairStormResponse, replacementsInFlight: z.number().int() };

export const safetyResponse = /* @__PURE__ */ z.object(safetyFields);

export const safetyResetResponse = /* @__PURE__ */ z.object({ ...safetyFields, heldBackAtReset: z.array(z.string()), applied: z.array(z.string()) });

export const repairResponse = /* @__PURE__ */ z.object({
  machineId: z.string(),
  stage: z.enum(['unclaimed', 'in-repair']),
  since: z.string(),
  waitingMinutes: z.number().int(),
  deadline: z.string(),
  stuck: z.boolean(),
});

export const auditEntryResponse = /* @__PURE__ */ z.object({
  ...actionFields,
  /** The resource acted on, as its path below /admin: `machines/m-1`, `tenants/acme`, `safety/repair-storm`, `machines`. */
  target: z.string(),
  before: z.unknown().optional(),
  after: z.unknown().optional(),
  requestId: z.string(),
});

/** One of an org's reported issues and what became of it (docs/api.md "Repair tickets"). */
export const repairTicketResponse = /* @__PURE__ */ z.object({
  id: z.string(),
  machineId: z.string(),
  instanceId: z.string(),
  category: z.enum(issueCategories),
  summary: z.string(),
  state: z.enum(ticketStates),
  openedAt: z.string(),
  updatedAt: z.string(),
  closedAt: z.string().optional(),
  action: z.enum(ticketActions).optional(),
});

export const registrationResponse = /* @__PURE__ */ z.object({ upserted: z.number().int() });

export const heartbeatReceiptResponse = /* @__PURE__ */ z.object({ received: z.number().int(), stored: z.boolean(), rosterBucketsChanged: z.number().int() });

/** API.md "Lists": a page of items and, when there is more, the token for the next page. */
export const listOf = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item), nextToken: z.string().optional() });

export const instanceListResponse = /* @__PURE__ */ listOf(instanceResponse);
export const machineListResponse = /* @__PURE__ */ listOf(machineResponse);
export const repairCandidateListResponse = /* @__PURE__ */ listOf(repairCandidateResponse);
export const metaInstanceListResponse = /* @__PURE__ */ listOf(metaInstanceResponse);
export const historyListResponse = /* @__PURE__ */ listOf(historyEntryResponse);
export const healthOverrideListResponse = /* @__PURE__ */ listOf(healthOverrideResponse);
export const repairListResponse = /* @__PURE__ */ listOf(repairResponse);
export const auditListResponse = /* @__PURE__ */ listOf(auditEntryResponse);
export const repairTicketListResponse = /* @__PURE__ */ listOf(repairTicketResponse);

const counts = /* @__PURE__ */ z.record(z.string(), z.number().int());

export const repairStatsResponse = /* @__PURE__ */ z
  .object({
    days: z.array(
      z.object({
        day: z.string().describe('UTC day, yyyy-mm-dd'),
        quarantined: z.number().int(),
        repairsCompleted: z.number().int(),
        repairsFailed: z.number().int(),
      }),
    ),
    timeToRepairMinutes: z.object({
      median: z.number().optional(),
      p90: z.number().optional(),
      count: z.number().int().describe('Repairs timed: RepairRequested to RepairCompleted, both in the window'),
    }),
  })
  .describe('Repair events per UTC day, oldest first, and time to repair over the window');

/** Machines, those allocatable now, and those with an override that prevents allocation. */
const tally = /* @__PURE__ */ z.object({ machines: z.number().int(), allocatable: z.number().int(), quarantined: z.number().int() });

/** Fleet counts as the machine listing would show them now, from the stream's aggregates (docs/api.md). */
export const fleetSummaryResponse = /* @__PURE__ */ z.object({
  machines: z.number().int(),
  allocatable: z.number().int(),
  stale: z.number().int(),
  byState: counts,
  byOverride: counts,
  byLifecycle: counts.describe('Machines by lifecycle; retired machines count here and nowhere else'),
  byType: z.record(
    z.string(),
    z.object({
      machines: z.number().int(),
      allocatable: z.number().int(),
      byNvlinkDomain: z.record(z.string(), tally).optional().describe('With `include=nvlinkDomains`: machines that carry an NVLink domain, per domain'),
    }),
  ),
  asOf: z.string(),
});

/** A rack with each machine's compact entry, as the stream last recorded it (heartbeat staleness is the reader's). */
export const rackResponse = /* @__PURE__ */ z.object({
  machineType: z.string(),
  rack: z.string(),
  machines: z.record(
    z.string(),
    z.object({
      version: z.number().int(),
      state: z.enum(machineStates),
      allocatable: z.boolean(),
      overrides: z.array(z.string()),
      quarantined: z.boolean(),
      live: z.boolean(),
      lastHeartbeatAt: z.string().optional(),
      nvlinkDomain: z.string().optional(),
      reservation: z.object({ id: z.string(), org: z.string() }).optional().describe('The reservation holding it for one org, while one does'),
      lifecycle: z.enum(lifecycles).optional(),
    }),
  ),
  tally: tally.describe("The rack's machines, retired ones left out, as the machine listing would count them now"),
  byNvlinkDomain: z.record(z.string(), tally).optional().describe("The same, per NVLink domain of the rack's machines"),
});

export const rackListResponse = /* @__PURE__ */ listOf(rackResponse);

export type Issue = z.infer<typeof issueResponse>;
export type HealthAlert = z.infer<typeof healthAlertResponse>;
export type HealthOverride = z.infer<typeof healthOverrideResponse>;
export type Instance = z.infer<typeof instanceResponse>;
export type Machine = z.infer<typeof machineResponse>;
export type RepairCandidate = z.infer<typeof repairCandidateResponse>;
export type MetaInstance = z.infer<typeof metaInstanceResponse>;
export type HistoryEntry = z.infer<typeof historyEntryResponse>;
export type Tenant = z.infer<typeof tenantResponse>;
export type RepairStorm = z.infer<typeof repairStormResponse>;
export type Safety = z.infer<typeof safetyResponse>;
export type SafetyReset = z.infer<typeof safetyResetResponse>;
export type Repair = z.infer<typeof repairResponse>;
export type InstanceList = z.infer<typeof instanceListResponse>;
export type MachineList = z.infer<typeof machineListResponse>;
export type RepairCandidateList = z.infer<typeof repairCandidateListResponse>;
export type MetaInstanceList = z.infer<typeof metaInstanceListResponse>;
export type HistoryList = z.infer<typeof historyListResponse>;
export type HealthOverrideList = z.infer<typeof healthOverrideListResponse>;
export type RepairList = z.infer<typeof repairListResponse>;
export type AuditEntry = z.infer<typeof auditEntryResponse>;
export type AuditList = z.infer<typeof auditListResponse>;

/** Builds a view: a record (or a record with derived fields) parsed through its response schema. */
export const viewOf = <S extends z.ZodType>(schema: S, record: z.input<S>): z.output<S> => schema.parse(record);

/** Schemas the OpenAPI document names under `components/schemas` (and refers to with `$ref`); the maintenance ones are in maintenance-responses.ts. */
export const componentNames: ReadonlyArray<readonly [z.ZodType, string]> = [
  [issueResponse, 'Issue'],
  [healthOverrideResponse, 'HealthOverride'],
  [instanceResponse, 'Instance'],
  [machineResponse, 'Machine'],
  [machineValidationResponse, 'MachineValidation'],
  [repairCandidateResponse, 'RepairCandidate'],
  [metaInstanceResponse, 'MetaInstance'],
  [historyEntryResponse, 'HistoryEntry'],
  [tenantResponse, 'Tenant'],
  [safetyResponse, 'Safety'],
  [safetyResetResponse, 'SafetyReset'],
  [repairResponse, 'Repair'],
  [auditEntryResponse, 'AuditEntry'],
  [fleetSummaryResponse, 'FleetSummary'],
  [rackResponse, 'Rack'],
  [repairStatsResponse, 'RepairStats'],
];
