import * as z from 'zod';
import { listOf } from '#domain/core/responses.ts';

// What a tenant org sees of its capacity (API.md "The tenant's governance view"): its own counts and machines, and
// nothing a provider keeps to itself (racks, other orgs, override details beyond their sources).

const count = /* @__PURE__ */ z.object({ machines: z.number().int(), gpus: z.number().int() });

export const orgCapacityResponse = /* @__PURE__ */ z.object({
  asOf: z.string(),
  byType: z.record(
    z.string(),
    z.object({ gpusPerMachine: z.number().int(), delivered: count, healthy: count, reserved: count, inUse: count, quota: count.optional() }),
  ),
});

export const capacityNodeResponse = /* @__PURE__ */ z.object({
  nodeId: z.string(),
  health: z.enum(['healthy', 'unhealthy']),
  /** Why it is unhealthy: health override sources, `cleanup-failed`, `heartbeat-stale`; empty when healthy. */
  healthDetail: z.array(z.string()),
  instanceId: z.string().optional(),
  createdAt: z.string(),
  machineType: z.string(),
  gpuCount: z.number().int(),
  org: z.string(),
  project: z.string().optional(),
  inUse: z.boolean(),
  region: z.string(),
  reservationId: z.string().optional(),
});

export const capacityNodeListResponse = /* @__PURE__ */ listOf(capacityNodeResponse);

/** One point of an org's capacity history: the counts of `GET .../capacity` at the start of an interval. */
export const capacityPointResponse = /* @__PURE__ */ z.object({
  at: z.string().describe('The start of the interval the point stands for (the sweep took it within that interval)'),
  byType: z.record(z.string(), z.object({ delivered: count, healthy: count, reserved: count, inUse: count })),
});

export const capacityHistoryResponse = /* @__PURE__ */ listOf(capacityPointResponse);

export type CapacityNodeView = z.infer<typeof capacityNodeResponse>;
