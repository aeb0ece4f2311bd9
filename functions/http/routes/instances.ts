import { instanceView } from '#domain/meta-instances/views.ts';
import type { Instance } from '#domain/core/model.ts';
import { instanceListResponse, instanceResponse } from '#domain/core/responses.ts';
import { createInstanceBody, emptyQuery, listInstancesQuery, params, patchInstanceBody, releaseInstanceBody, releaseV1Body } from '#domain/core/schemas.ts';
import { createInstance, loadOwnInstance, patchInstance, releaseInstance } from '#services/instances.ts';
import { instanceViews, instanceWithHealth } from '#services/tenant-health.ts';
import { defineRoute, listResult, type Route } from '#http/route.ts';

const base = '/v2/org/{org}/nico/instance';

/** 202 when the release started now, 200 when the instance was already on its way out (no longer on its machine). */
const released = ({ changed, instance }: { changed: boolean; instance: Instance }) => ({
  status: changed ? (202 as const) : (200 as const),
  body: instanceView(instance, null),
});
const releaseResponses = { 202: instanceResponse, 200: instanceResponse };

export const instanceRoutes: Route[] = [
  defineRoute({
    operationId: 'create-instance',
    method: 'POST',
    path: base,
    roles: ['tenant'],
    summary: 'Create an instance on a machine of a type, or on one machine (targeted, needs the capability)',
    params: params.org,
    query: emptyQuery,
    body: createInstanceBody,
    bodyRequired: true,
    responses: { 201: instanceResponse },
    errors: [
      [409, 'no-capacity'],
      [409, 'machine-unavailable'],
      [403, 'capability-required'],
      [422, 'unknown-machine-type'],
    ],
    // Just placed on a machine that was allocatable: healthy, with no read of it again.
    handle: async ({ principal, body }, ctx) => ({ status: 201, body: instanceView(await createInstance(ctx, principal, body), null) }),
  }),
  defineRoute({
    operationId: 'list-instances',
    method: 'GET',
    path: base,
    roles: ['tenant'],
    summary: "The org's instances, newest first",
    params: params.org,
    query: listInstancesQuery,
    responses: { 200: instanceListResponse },
    handle: async ({ principal, query }, ctx) => {
      const page = await ctx.store.listInstances(principal.org, query);
      return listResult(await instanceViews(ctx, page.items), page.nextToken);
    },
  }),
  defineRoute({
    operationId: 'get-instance',
    method: 'GET',
    path: `${base}/{id}`,
    roles: ['tenant'],
    summary: 'One instance',
    params: params.orgInstance,
    query: emptyQuery,
    responses: { 200: instanceResponse },
    handle: async ({ principal, params: p }, ctx) => ({ status: 200, body: await instanceWithHealth(ctx, await loadOwnInstance(ctx, principal, p.id)) }),
  }),
  defineRoute({
    operationId: 'delete-instance',
    method: 'DELETE',
    path: `${base}/{id}`,
    roles: ['tenant'],
    summary: 'Release an instance (202 Terminating; 200 when it was already released)',
    params: params.orgInstance,
    query: emptyQuery,
    body: releaseInstanceBody,
    responses: releaseResponses,
    errors: [
      [409, 'online-repair-active'],
      [403, 'capability-required'],
    ],
    handle: async ({ principal, params: p, body }, ctx) =>
      released(await releaseInstance(ctx, principal, p.id, { issue: body.machineHealthIssue, isRepairTenant: body.isRepairTenant })),
  }),
  defineRoute({
    operationId: 'update-instance',
    method: 'PATCH',
    path: `${base}/{id}`,
    roles: ['tenant'],
    summary: 'Change labels; enable or disable online repair (Ready ⇄ Repairing)',
    params: params.orgInstance,
    query: emptyQuery,
    body: patchInstanceBody,
    bodyRequired: true,
    responses: { 200: instanceResponse },
    errors: [
      [409, 'invalid-state'],
      [409, 'full-repair-active'],
    ],
    handle: async ({ principal, params: p, body }, ctx) => ({
      status: 200,
      body: await instanceWithHealth(ctx, await patchInstance(ctx, principal, p.id, body)),
    }),
  }),
  defineRoute({
    operationId: 'release-instance',
    method: 'POST',
    path: '/api/v1/instances/release',
    roles: ['tenant'],
    summary: "Release an instance of the caller's org, optionally reporting an issue (same as delete-instance)",
    query: emptyQuery,
    body: releaseV1Body,
    bodyRequired: true,
    responses: releaseResponses,
    errors: [[409, 'online-repair-active']],
    handle: async ({ principal, body }, ctx) => released(await releaseInstance(ctx, principal, body.id, { issue: body.issue })),
  }),
];
