import { instanceView } from '#domain/views.ts';
import { instanceResponse } from '#domain/responses.ts';
import { emptyQuery, params, powerInstanceBody } from '#domain/schemas.ts';
import { requestInstancePower } from '#services/power.ts';
import { defineRoute, type Route } from '#http/route.ts';

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
];
