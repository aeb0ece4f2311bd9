import { metaInstanceListResponse, metaInstanceResponse } from '#domain/core/responses.ts';
import { createMetaInstanceBody, emptyQuery, listQuery, params } from '#domain/core/schemas.ts';
import { createMetaInstance, deleteMetaInstance, listMetaInstances, showMetaInstance } from '#services/meta-instances.ts';
import { defineRoute, listResult, type Route } from '#http/route.ts';

const base = '/v2/org/{org}/nico/meta-instance';

const page = <T>(result: { items: T[]; nextToken?: string | undefined }) => listResult(result.items, result.nextToken);

export const metaInstanceRoutes: Route[] = [
  defineRoute({
    operationId: 'create-meta-instance',
    method: 'POST',
    path: base,
    roles: ['tenant'],
    summary: 'Keep minNodes machines of a type (same rack if asked); placed at once when capacity allows',
    params: params.org,
    query: emptyQuery,
    body: createMetaInstanceBody,
    bodyRequired: true,
    responses: { 201: metaInstanceResponse },
    errors: [[422, 'unsatisfiable']],
    handle: async ({ principal, body }, ctx) => ({ status: 201, body: await createMetaInstance(ctx, principal, body) }),
  }),
  defineRoute({
    operationId: 'list-meta-instances',
    method: 'GET',
    path: base,
    roles: ['tenant'],
    summary: "The org's meta-instances",
    params: params.org,
    query: listQuery,
    responses: { 200: metaInstanceListResponse },
    handle: async ({ principal, query }, ctx) => page(await listMetaInstances(ctx, principal.org, query)),
  }),
  defineRoute({
    operationId: 'get-meta-instance',
    method: 'GET',
    path: `${base}/{id}`,
    roles: ['tenant'],
    summary: 'One meta-instance with its instances',
    params: params.orgMetaInstance,
    query: emptyQuery,
    responses: { 200: metaInstanceResponse },
    handle: async ({ principal, params: p }, ctx) => ({ status: 200, body: await showMetaInstance(ctx, principal, p.id) }),
  }),
  defineRoute({
    operationId: 'delete-meta-instance',
    method: 'DELETE',
    path: `${base}/{id}`,
    roles: ['tenant'],
    summary: 'Delete a meta-instance; its instances are released with it',
    params: params.orgMetaInstance,
    query: emptyQuery,
    responses: { 202: metaInstanceResponse },
    handle: async ({ principal, params: p }, ctx) => ({ status: 202, body: await deleteMetaInstance(ctx, principal, p.id) }),
  }),
];
