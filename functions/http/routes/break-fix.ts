import { instanceView } from '#domain/meta-instances/views.ts';
import { instanceResponse, metaInstanceResponse, repairTicketListResponse } from '#domain/core/responses.ts';
import { emptyQuery, params, powerInstanceBody, repairTicketsQuery, replaceMemberBody } from '#domain/core/schemas.ts';
import { listRepairTickets } from '#services/repair-tickets.ts';
import { replaceMember } from '#services/member-replacement.ts';
import { requestInstancePower } from '#services/power.ts';
import { defineRoute, listResult, type Route } from '#http/route.ts';

// The tenant's break-fix primitives (docs/api.md "Break-fix"): power actions, a meta-instance member's replacement,
// and the org's repair tickets.

export const breakFixRoutes: Route[] = [
  defineRoute({
    operationId: 'power-instance',
    method: 'POST',
    path: '/v2/org/{org}/nico/instance/{id}/power',
    roles: ['tenant'],
    summary: 'Power-cycle, power off or power on an instance (202: recorded, sent to the site agent next)',
    params: params.orgInstance,
    query: emptyQuery,
    body: powerInstanceBody,
    bodyRequired: true,
    responses: { 202: instanceResponse },
    errors: [
      [409, 'invalid-state'],
      [409, 'power-action-in-progress'],
    ],
    handle: async ({ principal, params: p, body }, ctx) => ({
      status: 202,
      body: instanceView(await requestInstancePower(ctx, principal, p.id, body.action), null),
    }),
  }),
  defineRoute({
    operationId: 'replace-meta-instance-member',
    method: 'POST',
    path: '/v2/org/{org}/nico/meta-instance/{id}/replace',
    roles: ['tenant'],
    summary: 'Replace one member: make-before-break when capacity allows, else at once; an issue quarantines the old machine',
    params: params.orgMetaInstance,
    query: emptyQuery,
    body: replaceMemberBody,
    bodyRequired: true,
    responses: { 202: metaInstanceResponse },
    errors: [[409, 'invalid-state']],
    handle: async ({ principal, params: p, body }, ctx) => ({
      status: 202,
      body: await replaceMember(ctx, principal, p.id, { instanceId: body.instanceId, issue: body.issue }),
    }),
  }),
  defineRoute({
    operationId: 'list-repair-tickets',
    method: 'GET',
    path: '/v2/org/{org}/nico/repair-tickets',
    roles: ['tenant'],
    summary: "The org's reported issues as repair tickets, newest first, told from the machines' history",
    params: params.org,
    query: repairTicketsQuery,
    responses: { 200: repairTicketListResponse },
    handle: async ({ principal, query }, ctx) => {
      const page = await listRepairTickets(ctx, principal.org, query);
      return listResult(page.items, page.nextToken);
    },
  }),
];
