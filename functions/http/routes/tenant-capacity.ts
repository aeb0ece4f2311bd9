import { capacityNodeListResponse, orgCapacityResponse } from '#domain/capacity/capacity-responses.ts';
import { capacityEventsQuery, capacityEventsResponse } from '#domain/capacity/capacity-feed-schemas.ts';
import { readCapacityEvents } from '#services/capacity-events.ts';
import { emptyQuery, listQuery, params } from '#domain/core/schemas.ts';
import { listOrgNodes, readOrgCapacity } from '#services/org-capacity.ts';
import { reservationListResponse } from '#domain/reservations/reservation-responses.ts';
import { listReservations } from '#services/reservations.ts';
import { defineRoute, listResult, type Route } from '#http/route.ts';

const base = '/v2/org/{org}/nico';

/** A tenant org's governance view (CAP01, CAP02, CAP03): its own capacity counts, delivered machines and their changes. */
export const tenantCapacityRoutes: Route[] = [
  defineRoute({
    operationId: 'show-capacity',
    method: 'GET',
    path: `${base}/capacity`,
    roles: ['tenant'],
    summary: "The org's delivered, healthy, reserved and in-use machines and GPUs, per machine type",
    params: params.org,
    query: emptyQuery,
    responses: { 200: orgCapacityResponse },
    handle: async ({ params: p }, ctx) => ({ status: 200, body: await readOrgCapacity(ctx, p.org) }),
  }),
  defineRoute({
    operationId: 'list-nodes',
    method: 'GET',
    path: `${base}/nodes`,
    roles: ['tenant'],
    summary: "The org's delivered machines, one node record each",
    params: params.org,
    query: listQuery,
    responses: { 200: capacityNodeListResponse },
    handle: async ({ params: p, query }, ctx) => {
      const page = await listOrgNodes(ctx, p.org, query);
      return listResult(page.items, page.nextToken);
    },
  }),
  defineRoute({
    operationId: 'list-capacity-events',
    method: 'GET',
    path: `${base}/capacity-events`,
    roles: ['tenant'],
    summary: "The org's capacity delivered and withdrawn, with the reason, after a cursor",
    params: params.org,
    query: capacityEventsQuery,
    responses: { 200: capacityEventsResponse },
    errors: [[422, 'invalid-cursor']],
    handle: async ({ params: p, query }, ctx) => ({ status: 200, body: await readCapacityEvents(ctx, p.org, query) }),
  }),
  defineRoute({
    operationId: 'list-own-reservations',
    method: 'GET',
    path: `${base}/reservation`,
    roles: ['tenant'],
    summary: "The org's own reservations, newest first, each with its health",
    params: params.org,
    query: listQuery,
    responses: { 200: reservationListResponse },
    handle: async ({ params: p, query }, ctx) => {
      const page = await listReservations(ctx, p.org, query);
      return listResult(page.items, page.nextToken);
    },
  }),
];
