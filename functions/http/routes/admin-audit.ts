import { auditListResponse } from '#domain/core/responses.ts';
import { auditQuery } from '#domain/core/schemas.ts';
import { defineRoute, listResult, type Route } from '#http/route.ts';

/** The audit log: every provider action, written in the transaction that made it. */
export const adminAuditRoutes: Route[] = [
  defineRoute({
    operationId: 'list-audit',
    method: 'GET',
    path: '/admin/audit',
    roles: ['provider-admin'],
    summary: 'Provider actions, newest first, optionally of one actor, on one target, since a time',
    query: auditQuery,
    responses: { 200: auditListResponse },
    handle: async ({ query }, ctx) => {
      const { limit, nextToken, ...filter } = query;
      const page = await ctx.store.listAudit(filter, { limit, nextToken });
      return listResult(page.items, page.nextToken);
    },
  }),
];
