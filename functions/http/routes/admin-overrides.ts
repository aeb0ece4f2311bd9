import { healthOverrideListResponse, healthOverrideResponse, machineResponse } from '#domain/core/responses.ts';
import { labelsPatchBody, emptyQuery, params, overrideBody } from '#domain/core/schemas.ts';
import { requireMachine } from '#services/instances.ts';
import { addHealthOverride, patchMachineLabels, removeHealthOverride } from '#services/machine-actions.ts';
import { defineRoute, type Route } from '#http/route.ts';

/** The provider's hands on a machine's health: `machine health-override show|add|remove` and labels. */
export const adminOverrideRoutes: Route[] = [
  defineRoute({
    operationId: 'show-health-overrides',
    method: 'GET',
    path: '/admin/machines/{id}/health-overrides',
    roles: ['provider-admin'],
    summary: "The machine's health overrides",
    params: params.machine,
    query: emptyQuery,
    responses: { 200: healthOverrideListResponse },
    handle: async ({ params: p }, ctx) => ({ status: 200, body: { items: (await requireMachine(ctx, p.id)).healthOverrides } }),
  }),
  defineRoute({
    operationId: 'add-health-override',
    method: 'POST',
    path: '/admin/machines/{id}/health-overrides',
    roles: ['provider-admin'],
    summary: 'Add a health override from a template (kebab-case or PascalCase name)',
    params: params.machine,
    query: emptyQuery,
    body: overrideBody,
    bodyRequired: true,
    responses: { 201: healthOverrideResponse },
    errors: [
      [422, 'unknown-template'],
      [409, 'online-repair-active'],
    ],
    handle: async ({ requester, params: p, body }, ctx) => ({ status: 201, body: await addHealthOverride(ctx, p.id, body, requester) }),
  }),
  defineRoute({
    operationId: 'remove-health-override',
    method: 'DELETE',
    path: '/admin/machines/{id}/health-overrides/{source}',
    roles: ['provider-admin'],
    summary: 'Remove the health override of one source',
    params: params.machineOverride,
    query: emptyQuery,
    responses: { 204: null },
    handle: async ({ requester, params: p }, ctx) => {
      await removeHealthOverride(ctx, p.id, p.source, requester);
      return { status: 204 };
    },
  }),
  defineRoute({
    operationId: 'update-machine-labels',
    method: 'PATCH',
    path: '/admin/machines/{id}/labels',
    roles: ['provider-admin'],
    summary: 'Set or remove machine labels (null removes)',
    params: params.machine,
    query: emptyQuery,
    body: labelsPatchBody,
    bodyRequired: true,
    responses: { 200: machineResponse },
    handle: async ({ requester, params: p, body }, ctx) => ({ status: 200, body: await patchMachineLabels(ctx, p.id, body.labels, requester) }),
  }),
];
