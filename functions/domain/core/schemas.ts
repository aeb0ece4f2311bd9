import * as z from 'zod';
import { alertClassifications, powerActions } from '#site/agent-contract.ts';
import { ROSTER_PART_COUNTS } from '#config/roster-parts.ts';
import { machineIdRule } from '#site/machine-id.ts';
import { maintenanceCategories, maintenanceKinds, maintenanceStates } from '#domain/core/vocabulary.ts';

// Request shapes of API.md (responses are in responses.ts). The routes validate with them and the OpenAPI
// document is made from them. `.meta()` documents what the generator cannot derive but the handlers enforce;
// test/unit/openapi-drift.test.ts fails when the document says less than zod checks.

const machineId = /* @__PURE__ */ z.string().regex(machineIdRule.pattern, machineIdRule.message);
const org = /* @__PURE__ */ z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'letters, digits and . _ - (at most 64)');
const resourceId = /* @__PURE__ */ z.string().min(1).max(128);
const machineTypePattern = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const machineType = /* @__PURE__ */ z.string().regex(machineTypePattern, 'lower-case letters, digits and . _ - (at most 64)');
const labelKeyPattern = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$/;
const labelKey = /* @__PURE__ */ z.string().regex(labelKeyPattern, 'letters, digits and . _ / - (at most 63)');
const labelValue = /* @__PURE__ */ z.string().max(1024);

/**
 * The label key rule, which the generator leaves out of the document, as JSON Schema `propertyNames`. Written out:
 * z.toJSONSchema at import would cost every cold start about 3 ms (the drift test checks the two agree).
 */
const labelKeyRule = { propertyNames: { type: 'string', pattern: labelKeyPattern.source } };

const labels = /* @__PURE__ */ z
  .record(labelKey, labelValue)
  .refine((l) => Object.keys(l).length <= 64, 'at most 64 labels')
  .meta(labelKeyRule);
const instanceName = /* @__PURE__ */ z.string().regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, 'lower-case letters, digits and dashes (at most 63)');

export const issueCategories = ['HARDWARE', 'NETWORK', 'PERFORMANCE', 'OTHER'] as const;

/** Category in any letter case, stored upper-case; the document shows the canonical values. */
export const issueSchema = /* @__PURE__ */ z.strictObject({
  category: z
    .string()
    .transform((c) => c.toUpperCase())
    .pipe(z.enum(issueCategories))
    .meta({
      enum: [...issueCategories],
      description: `One of ${issueCategories.join(', ')}; the server normalises the value (e.g. letter case) before checking it.`,
    }),
  summary: z.string().min(1).max(1024),
  details: z.string().max(8192).optional(),
});

/** Query numbers are decimal digits only: `0x10`, `1e2`, ` 5` or `+5` would coerce to numbers nobody typed. */
const decimalDigits = (value: unknown, ctx: z.RefinementCtx) => {
  if (typeof value !== 'string' || /^[0-9]{1,9}$/.test(value)) return value;
  ctx.addIssue({ code: 'custom', message: 'decimal digits only', input: value });
  return z.NEVER;
};

export const pageQuery = {
  limit: z.preprocess(decimalDigits, z.coerce.number().int().min(1).max(500).default(50)),
  nextToken: z.string().min(1).max(2048).optional(),
};

export const listQuery = /* @__PURE__ */ z.strictObject(pageQuery);

/** Each ticket costs a read of its machine's history: a page is at most 50. */
export const repairTicketsQuery = /* @__PURE__ */ z.strictObject({
  limit: z.preprocess(decimalDigits, z.coerce.number().int().min(1).max(50).default(20)),
  nextToken: pageQuery.nextToken,
});

export const auditQuery = /* @__PURE__ */ z.strictObject({
  ...pageQuery,
  actor: z.string().min(1).max(256).optional(),
  target: z.string().min(1).max(256).optional(),
  // One spelling of each instant, so `since` compares with the stored times as text (they are all UTC with ms).
  since: z.iso
    .datetime({ offset: true })
    .transform((at) => new Date(at).toISOString())
    .optional(),
});

/** An org's capacity history: its points from `since` on (default: a day back), oldest first, a page at a time. */
export const capacityHistoryQuery = /* @__PURE__ */ z.strictObject({
  ...pageQuery,
  since: z.iso
    .datetime({ offset: true })
    .transform((at) => new Date(at).toISOString())
    .optional()
    .describe('The earliest point wanted (ISO 8601); default: a day before now'),
});

export const params = {
  org: z.strictObject({ org }),
  orgInstance: z.strictObject({ org, id: resourceId }),
  machine: z.strictObject({ id: machineId }),
  machineOverride: z.strictObject({ id: machineId, source: z.string().min(1).max(64) }),
  orgMachine: z.strictObject({ org, machineId }),
  orgMetaInstance: z.strictObject({ org, id: resourceId }),
  tenantOrg: z.strictObject({ org }),
  maintenance: z.strictObject({ id: resourceId }),
  maintenanceOrg: z.strictObject({ id: resourceId, org }),
  orgMaintenance: z.strictObject({ org, id: resourceId }),
  reservation: z.strictObject({ id: resourceId }),
};

export const createInstanceBody = /* @__PURE__ */ z
  .strictObject({
    machineType: machineType.optional(),
    machineId: machineId.optional(),
    name: instanceName.optional(),
    labels: labels.optional(),
  })
  .refine((b) => (b.machineType === undefined) !== (b.machineId === undefined), {
    message: 'give exactly one of machineType or machineId',
    path: ['machineType'],
  });

export const releaseInstanceBody = /* @__PURE__ */ z.strictObject({
  machineHealthIssue: issueSchema.optional(),
  isRepairTenant: z.boolean().optional(),
});

const labelPatch = /* @__PURE__ */ z
  .record(labelKey, labelValue.nullable())
  .refine((l) => Object.keys(l).length <= 64, 'at most 64 labels')
  .meta(labelKeyRule);

export const patchInstanceBody = /* @__PURE__ */ z.strictObject({
  labels: labelPatch.optional(),
  onlineRepair: z.strictObject({ enabled: z.boolean(), issue: issueSchema.optional() }).optional(),
});

export const powerInstanceBody = /* @__PURE__ */ z.strictObject({ action: z.enum(powerActions) });

export const replaceMemberBody = /* @__PURE__ */ z.strictObject({ instanceId: resourceId, issue: issueSchema.optional() });

export const releaseV1Body = /* @__PURE__ */ z.strictObject({ id: resourceId, issue: issueSchema.optional() });

export const labelsPatchBody = /* @__PURE__ */ z.strictObject({
  labels: labelPatch.refine((l) => Object.keys(l).length > 0, 'give at least one label'),
});

export const overrideBody = /* @__PURE__ */ z.strictObject({
  template: z.string().min(1).max(64),
  message: z.string().min(1).max(4096).optional(),
  mode: z.enum(['merge', 'replace']).optional(),
});

export const tenantMachinesQuery = /* @__PURE__ */ z.strictObject({ ...pageQuery, healthOverride: z.string().min(1).max(64).optional() });

export const createMetaInstanceBody = /* @__PURE__ */ z.strictObject({
  machineType,
  minNodes: z.number().int().min(1).max(24).default(1),
  machineIds: z
    .array(machineId)
    .max(24)
    .refine((ids) => new Set(ids).size === ids.length, 'machine ids must be unique')
    .optional(),
  placement: z
    .strictObject({ sameRack: z.boolean().default(false), sameNvlinkDomain: z.boolean().default(false) })
    .prefault({ sameRack: false, sameNvlinkDomain: false }),
  labels: labels.default({}),
});

export const instanceStatuses = ['Provisioning', 'Ready', 'Repairing', 'Terminating', 'Terminated', 'Failed'] as const;

export const listInstancesQuery = /* @__PURE__ */ z.strictObject({ ...pageQuery, status: z.enum(instanceStatuses).optional() });

export const registerMachinesBody = /* @__PURE__ */ z.strictObject({
  machines: z
    .array(
      z.strictObject({
        id: machineId,
        machineType,
        rack: z.string().min(1).max(64).optional(),
        nvlinkDomain: z.string().min(1).max(64).optional(),
        labels: labels.optional(),
      }),
    )
    .min(1)
    .max(1000)
    .refine((ms) => new Set(ms.map((m) => m.id)).size === ms.length, 'machine ids must be unique'),
});

export const listMachinesQuery = /* @__PURE__ */ z.strictObject({
  ...pageQuery,
  state: z.enum(['Ready', 'Assigned', 'Cleanup']).optional(),
  machineType: machineType.optional(),
  healthOverride: z.string().min(1).max(64).optional(),
  allocatable: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .optional(),
});

/** The rack map: one type's racks (by default the first type by name), a page of racks at a time. */
export const rackListQuery = /* @__PURE__ */ z.strictObject({ ...pageQuery, machineType: machineType.optional() });

/** The fleet summary: its counts, and per NVLink domain only when asked for. */
export const fleetSummaryQuery = /* @__PURE__ */ z.strictObject({
  include: z.enum(['nvlinkDomains']).optional().describe("`nvlinkDomains`: also count each type's machines per NVLink domain (`byNvlinkDomain`)"),
});

export const tenantBody = /* @__PURE__ */ z
  .strictObject({
    capabilities: z.strictObject({ targetedInstanceCreation: z.boolean() }).optional(),
    quotas: z
      .record(machineType, z.number().int().min(0).max(1_000_000))
      .refine((q) => Object.keys(q).length <= 50, 'at most 50 machine types')
      .meta({ propertyNames: { type: 'string', pattern: machineTypePattern.source } })
      .optional()
      .describe('Most machines of each type the org may hold at once; replaces the quotas the org had (a type left out has none)'),
  })
  .refine((body) => body.capabilities !== undefined || body.quotas !== undefined, 'give capabilities, quotas or both');

/**
 * What the site agent posts, as the agent's contract (agent-contract.ts, zod/mini) has it, in zod for the route's
 * validation and the OpenAPI document; a unit test holds the two to the same verdicts.
 */
const agentAlert = /* @__PURE__ */ z.strictObject({
  id: z.string().min(1).max(128),
  message: z.string().max(4096),
  classifications: z.array(z.enum(alertClassifications)).max(alertClassifications.length),
});
export const heartbeatBody = /* @__PURE__ */ z.strictObject({
  machines: z.array(z.strictObject({ id: machineId, alerts: z.array(agentAlert).max(64).optional() })).max(100_000),
  part: z
    .strictObject({ index: z.number().int().min(0), count: z.union(ROSTER_PART_COUNTS.map((n) => z.literal(n))) })
    .refine((p) => p.index < p.count, { message: 'index must be below count', path: ['index'] })
    .optional()
    .describe(
      'One part of a roster too large for one beat: the machines whose bucket (SHA-256 ' +
        'of the id, first 4 bytes big-endian, modulo 64) modulo `count` is `index`',
    ),
});

export const cleanupReportBody = /* @__PURE__ */ z.strictObject({
  ok: z.boolean(),
  message: z.string().max(4096).optional(),
});

export const retireBody = /* @__PURE__ */ z.strictObject({ reason: z.string().min(1).max(1024) });

export const validationReportBody = /* @__PURE__ */ z.strictObject({
  validationId: z.string().min(1).max(128),
  passed: z.boolean(),
  results: z.array(z.strictObject({ test: z.string().min(1).max(128), passed: z.boolean(), message: z.string().max(1024).optional() })).max(64),
});

export const emptyQuery = /* @__PURE__ */ z.strictObject({});

export const repairStatsQuery = /* @__PURE__ */ z.strictObject({
  days: z.preprocess(decimalDigits, z.coerce.number().int().min(1).max(90).default(30)),
});

const nameList = (item: z.ZodType<string>) => z.array(item).min(1).max(1000);
/** An instant with its offset, e.g. 2026-12-14T09:00:00Z; spelt out as a pattern so the OpenAPI document carries it. */
const time = /* @__PURE__ */ z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/, 'an ISO 8601 time with its offset, e.g. 2026-12-14T09:00:00Z')
  .refine((at) => !Number.isNaN(Date.parse(at)), 'not a real time');

/** POST /admin/maintenance. The scope's names are resolved once, here; at least one of them must be given. */
export const declareMaintenanceBody = /* @__PURE__ */ z.strictObject({
  kind: z.enum(maintenanceKinds),
  category: z.enum(maintenanceCategories),
  reason: z.string().min(1).max(1024),
  impact: z.string().max(4096).optional(),
  scope: z
    .strictObject({
      machineIds: nameList(machineId).optional(),
      racks: nameList(z.string().min(1).max(128)).optional(),
      nvlinkDomains: nameList(z.string().min(1).max(128)).optional(),
    })
    .refine((s) => s.machineIds !== undefined || s.racks !== undefined || s.nvlinkDomains !== undefined, 'name machineIds, racks or nvlinkDomains'),
  handBackBy: time,
  windowMinutes: z.number().int().min(1).max(525_600),
  rollout: z
    .strictObject({ maxInFlight: z.number().int().min(1).max(10_000).optional(), haltAfterFailures: z.number().int().min(1).max(10_000).optional() })
    .optional(),
});

export const maintenanceListQuery = /* @__PURE__ */ z.strictObject({ ...pageQuery, state: z.enum(maintenanceStates).optional() });

export const deferralDecisionBody = /* @__PURE__ */ z.strictObject({ decision: z.enum(['accept', 'reject']) });

export const deferralRequestBody = /* @__PURE__ */ z.strictObject({ until: time, reason: z.string().min(1).max(1024) });

export const handBackBody = /* @__PURE__ */ z.strictObject({ instanceIds: z.array(resourceId).min(1).max(100) });

/** POST /site/v1/machines/{id}/maintenance: the agent's report of one machine's maintenance work. */
export const maintenanceReportBody = /* @__PURE__ */ z.strictObject({ maintenanceId: resourceId, ok: z.boolean(), message: z.string().max(4096).optional() });

/** POST /admin/reservations: exactly one of a count, machine ids or NVLink domains (whole domains). */
export const createReservationBody = /* @__PURE__ */ z
  .strictObject({
    org,
    machineType,
    count: z.number().int().min(1).max(5_000).optional(),
    machineIds: z
      .array(machineId)
      .min(1)
      .max(5_000)
      .refine((ids) => new Set(ids).size === ids.length, 'machine ids must be unique')
      .optional(),
    nvlinkDomains: z
      .array(z.string().min(1).max(128))
      .min(1)
      .max(500)
      .refine((ids) => new Set(ids).size === ids.length, 'NVLink domains must be unique')
      .optional(),
    name: z.string().min(1).max(128).optional(),
  })
  .refine((b) => [b.count, b.machineIds, b.nvlinkDomains].filter((x) => x !== undefined).length === 1, {
    message: 'give exactly one of count, machineIds or nvlinkDomains',
    path: ['count'],
  });
