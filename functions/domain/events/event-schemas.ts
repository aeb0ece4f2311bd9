import * as z from 'zod';
import type { capacityReasons } from '#domain/core/vocabulary.ts';
import { maintenanceCategories, maintenanceKinds, validationReasons } from '#domain/core/vocabulary.ts';
import { EVENT_VERSIONS, type EventType } from '#domain/events/event-versions.ts';
import { issueSchema } from '#domain/core/schemas.ts';

// The events repair automation is told about (EventBridge detail types) and the shape of each one's detail. A
// detail changes shape only together with its type's `version` (event-versions.ts). docs/events/ holds the JSON Schemas made from these
// (`npm run gen:events`), and the CDK stack registers them in the bus's schema registry.

const timestamp = /* @__PURE__ */ z.iso.datetime();

/** What every event's detail carries. */
const common = <V extends number>(version: V) => ({
  id: z.uuid().describe('Stable id of this occurrence: a redelivery carries the same id, so consumers dedupe on it'),
  version: z.literal(version).describe('Schema version of this event type'),
  at: timestamp.describe('When it happened (ISO 8601, UTC)'),
});

/** What every event about a machine carries: the machine as the change left it. */
const machineFields = {
  requestId: z.string().min(1).optional().describe('The API request that caused it, when one did'),
  machineId: z.string().min(1),
  machineType: z.string().min(1),
  rack: z.string().min(1),
  instanceId: z.string().min(1).optional().describe('The instance whose release or repair it concerns'),
  issue: issueSchema.optional().describe('The issue reported with the release, or the repair request'),
  overrides: z.array(z.string()).describe('Sources of the health overrides on the machine after the change'),
  labels: z.record(z.string(), z.string()).describe("The machine's labels after the change"),
};

const earlierReports = /* @__PURE__ */ z
  .array(z.strictObject({ at: timestamp, issue: issueSchema.optional() }))
  .describe('The reports that count towards escalation, oldest first');
const repairRequestHeldBack = /* @__PURE__ */ z.literal(true).describe('The repair-storm breaker held the repair request back');

const validationFields = {
  validationId: z.string().min(1),
  reason: z.enum(validationReasons).describe('Why the machine was validated'),
  suite: z.string().min(1).describe('The suite the agent ran'),
  results: z
    .array(z.strictObject({ test: z.string().min(1), passed: z.boolean(), message: z.string().optional() }))
    .describe('What the agent reported, test by test'),
};

function machineEvent<V extends number, Extra extends z.ZodRawShape>(version: V, description: string, extra: Extra) {
  return { version, description, detail: z.strictObject({ ...common(version), ...machineFields, ...extra }) };
}

/** What every maintenance event carries: the maintenance it is about. */
function maintenanceEvent<V extends number, Extra extends z.ZodRawShape>(version: V, description: string, extra: Extra) {
  const fields = {
    maintenanceId: z.string().min(1),
    kind: z.enum(maintenanceKinds),
    category: z.enum(maintenanceCategories),
  };
  return { version, description, detail: z.strictObject({ ...common(version), ...fields, ...extra }) };
}
const org = /* @__PURE__ */ z.string().min(1).describe('The tenant org');

/** What a capacity event carries: the entry of the org's capacity-events feed it mirrors. */
function capacityEvent<V extends number>(version: V, description: string, reasons: ReadonlyArray<(typeof capacityReasons)[number]>) {
  const fields = {
    entryId: z.string().min(1).describe("The id of the entry in the org's capacity-events feed (GET /v2/org/{org}/nico/capacity-events)"),
    org,
    machineId: z.string().min(1),
    machineType: z.string().min(1),
    reason: z.enum(reasons as [string, ...string[]]).describe('Why the capacity changed'),
  };
  return { version, description, detail: z.strictObject({ ...common(version), ...fields }) };
}
const handBackBy = timestamp.describe("The org's hand-back deadline");

export const eventCatalog = {
  MachineQuarantined: machineEvent(EVENT_VERSIONS.MachineQuarantined, 'A tenant reported an issue with the machine it released: the machine is quarantined.', {
    repairRequestHeldBack: repairRequestHeldBack.optional(),
    earlierReports: earlierReports.optional(),
  }),
  RepairRequested: machineEvent(
    EVENT_VERSIONS.RepairRequested,
    'The machine asks for automated repair (a request-repair override): a repair tenant may claim it.',
    {},
  ),
  RepairCompleted: machineEvent(
    EVENT_VERSIONS.RepairCompleted,
    'A repair tenant released the machine with repair_status Completed: the repair request is cleared.',
    {},
  ),
  RepairFailed: machineEvent(EVENT_VERSIONS.RepairFailed, 'A repair tenant released the machine without a completed repair: it stays quarantined.', {}),
  RepairEscalated: machineEvent(
    EVENT_VERSIONS.RepairEscalated,
    'The machine was reported again after repeated repairs: it is out for repair by people, not automation.',
    {
      earlierReports,
    },
  ),
  RepairStormDetected: machineEvent(
    EVENT_VERSIONS.RepairStormDetected,
    'Too many machines were quarantined at once: the breaker trips and holds repair requests back.',
    {
      repairRequestHeldBack,
    },
  ),
  RepairStuck: machineEvent(
    EVENT_VERSIONS.RepairStuck,
    'A repair waits past its SLA: unclaimed past claim_minutes, or in repair past repair_eta or repair_hours.',
    {
      stage: z.enum(['unclaimed', 'in-repair']).describe('Waiting for a repair tenant to claim it, or claimed and under repair'),
      since: timestamp.describe('Since when it is in that stage'),
      waitingMinutes: z.number().int().min(0),
    },
  ),
  ValidationPassed: machineEvent(
    EVENT_VERSIONS.ValidationPassed,
    "The site agent's validation of the machine passed: its validation override is gone, and it is allocatable unless something else holds it.",
    validationFields,
  ),
  ValidationFailed: machineEvent(
    EVENT_VERSIONS.ValidationFailed,
    "The site agent's validation of the machine failed: a reported fault, quarantined by a validation-failed override (one alert per failed test).",
    validationFields,
  ),
  ValidationStuck: machineEvent(
    EVENT_VERSIONS.ValidationStuck,
    'The site agent accepted a validation and did not report it within timeout_minutes: raised once per validation, and the agent is asked again.',
    {
      validationId: validationFields.validationId,
      reason: validationFields.reason,
      suite: validationFields.suite,
      askedAt: timestamp.describe('When the agent accepted the validation'),
      timeoutMinutes: z.number().positive().describe("The site's [validation] timeout_minutes"),
    },
  ),
  MachineRetired: machineEvent(EVENT_VERSIONS.MachineRetired, 'A provider retired the machine: it is never allocated again, and keeps its history.', {
    reason: z.string().min(1).describe("The provider's reason"),
  }),
  SiteAgentSilent: {
    version: EVENT_VERSIONS.SiteAgentSilent,
    description: "The site agent sent no roster for longer than the heartbeat timeout: every machine's heartbeat is stale.",
    detail: z.strictObject({
      ...common(EVENT_VERSIONS.SiteAgentSilent),
      site: z.string().min(1).describe('The site whose agent is silent'),
      lastRosterAt: timestamp.describe('When the last roster arrived'),
      silentForSeconds: z.number().int().min(0),
      timeoutSeconds: z.number().int().min(1).describe("The site's heartbeat timeout"),
    }),
  },
  MaintenanceDeclared: maintenanceEvent(
    EVENT_VERSIONS.MaintenanceDeclared,
    'Maintenance was declared on machines an org holds: one event per org, listing its instances and its hand-back deadline.',
    { org, instanceIds: z.array(z.string().min(1)).min(1).describe("The org's instances on machines in scope"), handBackBy },
  ),
  MaintenanceHandBackDue: maintenanceEvent(
    EVENT_VERSIONS.MaintenanceHandBackDue,
    "An org's hand-back deadline is [maintenance] notice_hours away and it still holds machines in scope.",
    { org, handBackBy },
  ),
  MaintenanceEnforced: maintenanceEvent(
    EVENT_VERSIONS.MaintenanceEnforced,
    'The hand-back deadline passed: Fleetward released an instance still held (terminationReason maintenance-enforced).',
    { org, instanceId: z.string().min(1), machineId: z.string().min(1) },
  ),
  MaintenanceHalted: maintenanceEvent(
    EVENT_VERSIONS.MaintenanceHalted,
    'Machines failed their maintenance rollout.haltAfterFailures times: no machine is admitted until the provider resumes it.',
    { failures: z.number().int().min(1) },
  ),
  MaintenanceOverdue: maintenanceEvent(
    EVENT_VERSIONS.MaintenanceOverdue,
    "A machine is not back within the maintenance's window of its hand-back: sent once per machine.",
    { machineId: z.string().min(1), handedBackAt: timestamp, windowMinutes: z.number().int().min(1) },
  ),
  MaintenanceCompleted: maintenanceEvent(EVENT_VERSIONS.MaintenanceCompleted, 'Every machine in scope is returned or failed.', {
    returned: z.number().int().min(0),
    failed: z.number().int().min(0),
  }),
  CapacityDelivered: capacityEvent(
    EVENT_VERSIONS.CapacityDelivered,
    'A machine was delivered to the org: its reservation took it, or it came back to the org from repair or maintenance.',
    ['reservation', 'repair-return', 'maintenance-return'],
  ),
  CapacityWithdrawn: capacityEvent(
    EVENT_VERSIONS.CapacityWithdrawn,
    "A machine was withdrawn from the org: it left the org's reservation, or went to repair or maintenance, or was retired.",
    ['reservation-released', 'repair', 'maintenance', 'retired'],
  ),
} as const satisfies { [T in EventType]: { version: (typeof EVENT_VERSIONS)[T]; description: string; detail: z.ZodType } };

export type { EventType, MachineEventType } from '#domain/events/event-versions.ts';
export const EVENT_TYPES = Object.keys(eventCatalog) as EventType[];
