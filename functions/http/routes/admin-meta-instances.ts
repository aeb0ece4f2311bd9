import { metaInstanceListResponse } from '#domain/core/responses.ts';
import { listQuery } from '#domain/core/schemas.ts';
import { listMetaInstances } from '#services/meta-instances.ts';
import { defineRoute, listResult, type Route } from '#http/route.ts';

/** The provider's view of meta-instances: every org's, where the tenant routes show one org's. */
export const adminMetaInstanceRoutes: Route[] = [
  defineRoute({
    operationId: 'list-all-meta-instances',
    method: 'GET',
    path: '/admin/meta-instances',
    roles: ['provider-admin'],
    summary: 'Every meta-instance on the site, newest first',
    query: listQuery,
    responses: { 200: metaInstanceListResponse },
    handle: async ({ query }, ctx) => {
      const { items, nextToken } = await listMetaInstances(ctx, null, query);
      return listResult(items, nextToken);
    },
  }),
];
