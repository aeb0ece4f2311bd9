import { gpusPerMachine } from '#domain/machines/gpu-catalog.ts';
import { heartbeatStale } from '#domain/core/health.ts';
import type { Machine } from '#domain/core/model.ts';
import { capacityNodeResponse, type CapacityNodeView } from '#domain/capacity/capacity-responses.ts';
import { orgCapacity, type CapacityNode, type OrgCapacity } from '#domain/capacity/org-capacity.ts';
import type { AppContext } from '#runtime/context.ts';
import { loadHeartbeatView } from '#runtime/heartbeat-view.ts';
import type { Page } from '#store/paging.ts';
import type { PageRequest } from '#store/port.ts';

/**
 * An org's capacity from its counter shards: one Query of at most ORG_CAPACITY_SHARDS items, one of its quota usage
 * items (one per machine type) and the site heartbeat.
 */
export async function readOrgCapacity(ctx: AppContext, org: string): Promise<OrgCapacity> {
  const [shards, usage, heartbeat] = await Promise.all([ctx.store.orgCapacityShards(org), ctx.store.listQuotaUsage(org), loadHeartbeatView(ctx)]);
  const quotas = Object.fromEntries(usage.flatMap((u) => (u.quota !== undefined ? [[u.machineType, u.quota] as const] : [])));
  return orgCapacity(shards, quotas, (type) => gpusPerMachine(ctx.config, type), heartbeat, ctx.clock.now());
}

/** A page of the org's delivered machines as node records (CAP02), from the byOrg index: one Query a page. */
export async function listOrgNodes(ctx: AppContext, org: string, page: PageRequest): Promise<Page<CapacityNodeView>> {
  const [nodes, heartbeat] = await Promise.all([ctx.store.listCapacityNodes(org, page), loadHeartbeatView(ctx)]);
  const now = ctx.clock.now();
  const items = nodes.items.flatMap((node: CapacityNode) => {
    const entry = node.entry;
    // The index may lag a node's move to another org: only the org's own are shown.
    if (!entry || entry.org !== org) return [];
    const probe = { heartbeatLive: entry.live, ...(entry.lastHeartbeatAt ? { lastHeartbeatAt: entry.lastHeartbeatAt } : {}) } as Machine;
    const healthDetail = [...entry.unfit, ...(heartbeatStale(probe, heartbeat, now) ? ['heartbeat-stale'] : [])];
    return [
      capacityNodeResponse.parse({
        nodeId: node.machineId,
        health: healthDetail.length === 0 ? 'healthy' : 'unhealthy',
        healthDetail,
        instanceId: entry.instanceId,
        createdAt: entry.createdAt,
        machineType: entry.machineType,
        gpuCount: gpusPerMachine(ctx.config, entry.machineType),
        org,
        project: entry.project,
        inUse: entry.inUse,
        region: ctx.config.site.region,
        reservationId: entry.reservationId,
      }),
    ];
  });
  return { items, nextToken: nodes.nextToken };
}
