import { z } from 'zod';
import { instanceView } from '#domain/instances.ts';
import {
  createInstanceBody,
  emptyQuery,
  instanceResponse,
  listInstancesQuery,
  params,
  releaseInstanceBody,
} from '#domain/schemas.ts';
import type { AppContext } from '#services/context.ts';
import { createInstance, loadOwnInstance, releaseInstance } from '#services/instances.ts';
import { defineRoute, type Route } from '../route.ts';

const base = '/v2/org/{org}/nico/instance';
const list = (item: z.ZodType) => z.object({ items: z.array(item), nextToken: z.string().optional() });

export function instanceRoutes(ctx: AppContext): Route[] {
  return [
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
      response: instanceResponse,
      errors: [[409, 'no-capacity'], [409, 'machine-unavailable'], [403, 'capability-required'], [422, 'unknown-machine-type']],
      handle: async ({ principal, body }) => ({ status: 201, body: instanceView(await createInstance(ctx, principal, body)) }),
    }),
    defineRoute({
      operationId: 'list-instances',
      method: 'GET',
      path: base,
      roles: ['tenant'],
      summary: "The org's instances, newest first",
      params: params.org,
      query: listInstancesQuery,
      response: list(instanceResponse),
      handle: async ({ principal, query }) => {
        const page = await ctx.store.listInstances(principal.org, query);
        return { status: 200, body: { items: page.items.map(instanceView), ...(page.nextToken ? { nextToken: page.nextToken } : {}) } };
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
      response: instanceResponse,
      handle: async ({ principal, params: p }) => ({ status: 200, body: instanceView(await loadOwnInstance(ctx, principal, p.id)) }),
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
      response: instanceResponse,
      errors: [[409, 'online-repair-active']],
      handle: async ({ principal, params: p }) => {
        const { changed, instance } = await releaseInstance(ctx, principal, p.id);
        return { status: changed ? 202 : 200, body: instanceView(instance) };
      },
    }),
  ];
}
