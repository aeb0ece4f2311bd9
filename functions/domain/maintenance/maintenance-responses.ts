import { machinePhases } from '#domain/maintenance/maintenance.ts';
import { historyEntryResponse } from '#domain/core/responses.ts';
import * as z from 'zod';

import { maintenanceCategories, maintenanceKinds, maintenanceStates } from '#domain/core/vocabulary.ts';
// What the maintenance routes answer with (docs/api.md "Declared maintenance"): the provider's view of a maintenance,
// the tenant's (its own machines and deferral only), and the receipts of a hand-back and of the agent's report.

const maintenanceMachineResponse = /* @__PURE__ */ z.object({
  phase: z.enum(machinePhases),
  org: z.string().optional(),
  instanceId: z.string().optional(),
  handBackBy: z.string(),
  handedBackAt: z.string().optional(),
  startedAt: z.string().optional(),
  returnedAt: z.string().optional(),
  overdue: z.boolean(),
  message: z.string().optional(),
});

const deferralResponse = /* @__PURE__ */ z.object({
  org: z.string(),
  until: z.string(),
  reason: z.string(),
  state: z.enum(['requested', 'accepted', 'rejected']),
  decidedBy: z.string().optional(),
});

const maintenanceFields = {
  id: z.string(),
  kind: z.enum(maintenanceKinds),
  category: z.enum(maintenanceCategories),
  reason: z.string(),
  impact: z.string().optional(),
  handBackBy: z.string(),
  windowMinutes: z.number().int(),
  state: z.enum(maintenanceStates),
  machines: z.record(z.string(), maintenanceMachineResponse),
  deferrals: z.array(deferralResponse),
  createdAt: z.string(),
  updatedAt: z.string(),
  completedAt: z.string().optional(),
};

/** A maintenance as the provider sees it; `history` (newest first) only on GET of one. */
export const maintenanceResponse = /* @__PURE__ */ z.object({
  ...maintenanceFields,
  scope: z.object({ machineIds: z.array(z.string()).optional(), racks: z.array(z.string()).optional(), nvlinkDomains: z.array(z.string()).optional() }),
  machineIds: z.array(z.string()),
  rollout: z.object({ maxInFlight: z.number().int(), haltAfterFailures: z.number().int() }),
  declaredBy: z.string(),
  history: z.array(historyEntryResponse).optional(),
});

/** A maintenance as a tenant sees it: only its own machines and its own deferral; no scope, no other org. */
export const tenantMaintenanceResponse = /* @__PURE__ */ z.object(maintenanceFields);

export const maintenanceListResponse = /* @__PURE__ */ z.object({ items: z.array(maintenanceResponse), nextToken: z.string().optional() });
export const tenantMaintenanceListResponse = /* @__PURE__ */ z.object({ items: z.array(tenantMaintenanceResponse) });
export const handBackResponse = /* @__PURE__ */ z.object({ handedBack: z.array(z.string()) });
/** What the agent's report did: `changed` false for a report about a machine not in that maintenance's work. */
export const maintenanceReportResponse = /* @__PURE__ */ z.object({
  changed: z.boolean(),
  phase: z.enum(machinePhases).optional(),
  state: z.enum(maintenanceStates),
});

/** Maintenance schemas the OpenAPI document names under `components/schemas`. */
export const maintenanceComponentNames: ReadonlyArray<readonly [z.ZodType, string]> = [
  [maintenanceResponse, 'Maintenance'],
  [tenantMaintenanceResponse, 'TenantMaintenance'],
];
