import { fleetSummaryResponse, repairStatsResponse, rackListResponse, rackResponse, viewOf } from '#domain/core/responses.ts';
import { fleetSummaryQuery, rackListQuery, repairStatsQuery } from '#domain/core/schemas.ts';
import { listRacks, readFleetSummary } from '#services/fleet-summary.ts';
import { readRepairStats } from '#services/repair-stats.ts';
import { defineRoute, listResult, type Route } from '#http/route.ts';

/** Fleet-wide pictures from the stream's aggregates: bounded reads, whatever the fleet's size. */
export const adminFleetRoutes: Route[] = [
  defineRoute({
    operationId: 'fleet-summary',
    method: 'GET',
    path: '/admin/fleet/summary',
    roles: ['provider-admin'],
    summary: 'Fleet counts by state, override, lifecycle and type, and per NVLink domain when asked for ("machine summary")',
    query: fleetSummaryQuery,
    responses: { 200: fleetSummaryResponse },
    handle: async ({ query }, ctx) => ({ status: 200, body: await readFleetSummary(ctx, { nvlinkDomains: query.include === 'nvlinkDomains' }) }),
  }),
  defineRoute({
    operationId: 'list-racks',
    method: 'GET',
    path: '/admin/fleet/racks',
    roles: ['provider-admin'],
    summary: "One machine type's racks, each with its machines' compact entries and its tallies (per NVLink domain too), for the rack map",
    query: rackListQuery,
    responses: { 200: rackListResponse },
    handle: async ({ query }, ctx) => {
      const page = await listRacks(ctx, query.machineType, { limit: query.limit, nextToken: query.nextToken });
      return listResult(
        page.items.map((rack) => viewOf(rackResponse, rack)),
        page.nextToken,
      );
    },
  }),
  defineRoute({
    operationId: 'repair-stats',
    method: 'GET',
    path: '/admin/fleet/repair-stats',
    roles: ['provider-admin'],
    summary: 'Quarantines, repairs completed and failed per UTC day, and time to repair (median, p90), over the last `days` days',
    query: repairStatsQuery,
    responses: { 200: repairStatsResponse },
    handle: async ({ query }, ctx) => ({ status: 200, body: await readRepairStats(ctx, query.days) }),
  }),
];
