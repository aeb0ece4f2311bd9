import { capacityHistoryResponse } from '#domain/capacity/capacity-responses.ts';
import { capacityHistoryQuery, params } from '#domain/core/schemas.ts';
import { listCapacityHistory } from '#services/capacity-history.ts';
import { defineRoute, listResult, type Route } from '#http/route.ts';

// An org's capacity over time (delivered, healthy, reserved, in use), a point per interval the sweep takes: the org
// reads its own, the provider any org's (the dashboard's capacity page).

const summary = "The org's capacity points from `since` on, oldest first: delivered, healthy, reserved and in use per type";

export const tenantCapacityHistoryRoutes: Route[] = [
  defineRoute({
    operationId: 'list-capacity-history',
    method: 'GET',
    path: '/v2/org/{org}/nico/capacity/history',
    roles: ['tenant'],
    summary,
    params: params.org,
    query: capacityHistoryQuery,
    responses: { 200: capacityHistoryResponse },
    handle: async ({ params: p, query }, ctx) => {
      const page = await listCapacityHistory(ctx, p.org, query);
      return listResult(page.items, page.nextToken);
    },
  }),
];

export const adminCapacityHistoryRoutes: Route[] = [
  defineRoute({
    operationId: 'list-tenant-capacity-history',
    method: 'GET',
    path: '/admin/tenants/{org}/capacity/history',
    roles: ['provider-admin'],
    summary,
    params: params.tenantOrg,
    query: capacityHistoryQuery,
    responses: { 200: capacityHistoryResponse },
    handle: async ({ params: p, query }, ctx) => {
      const page = await listCapacityHistory(ctx, p.org, query);
      return listResult(page.items, page.nextToken);
    },
  }),
];
