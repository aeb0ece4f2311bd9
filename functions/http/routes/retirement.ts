import { machineResponse } from '#domain/core/responses.ts';
import { emptyQuery, params, retireBody } from '#domain/core/schemas.ts';
import { retireMachine } from '#services/retirement.ts';
import { defineRoute, type Route } from '#http/route.ts';

/** Retirement (docs/api.md "Retirement"): a machine out for good. */
export const retirementRoutes: Route[] = [
  defineRoute({
    operationId: 'retire-machine',
    method: 'POST',
    path: '/admin/machines/{id}/retire',
    roles: ['provider-admin'],
    summary: 'Retire the machine for good: never allocated again, out of the capacity counts, its history kept',
    params: params.machine,
    query: emptyQuery,
    body: retireBody,
    bodyRequired: true,
    responses: { 200: machineResponse },
    errors: [[409, 'machine-in-use']],
    handle: async ({ requester, params: p, body }, ctx) => ({ status: 200, body: await retireMachine(ctx, p.id, body.reason, requester) }),
  }),
];
