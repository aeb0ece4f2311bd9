import * as z from 'zod';
import { repairListResponse, safetyResetResponse, safetyResponse } from '#domain/core/responses.ts';
import { emptyQuery, pageQuery } from '#domain/core/schemas.ts';
import { resetRepairStorm, showSafety } from '#services/safety.ts';
import { listRepairs } from '#services/stuck-repairs.ts';
import { defineRoute, listResult, type Route } from '#http/route.ts';

/** Fleet safety: the repair-storm breaker, the replacement cap and repairs nobody finishes. */
export const adminSafetyRoutes: Route[] = [
  defineRoute({
    operationId: 'show-safety',
    method: 'GET',
    path: '/admin/safety',
    roles: ['provider-admin'],
    summary: 'The repair-storm breaker (with the machines it held back) and meta-instance replacements in flight',
    query: emptyQuery,
    responses: { 200: safetyResponse },
    handle: async (_request, ctx) => ({ status: 200, body: await showSafety(ctx) }),
  }),
  defineRoute({
    operationId: 'reset-repair-storm',
    method: 'POST',
    path: '/admin/safety/repair-storm/reset',
    roles: ['provider-admin'],
    summary: 'Close the repair-storm breaker; applyHeldBack also applies the repair requests it held back',
    query: emptyQuery,
    body: z.strictObject({ applyHeldBack: z.boolean().default(false) }),
    responses: { 200: safetyResetResponse },
    handle: async ({ requester, body }, ctx) => ({ status: 200, body: await resetRepairStorm(ctx, body.applyHeldBack, requester) }),
  }),
  defineRoute({
    operationId: 'list-repairs',
    method: 'GET',
    path: '/admin/repairs',
    roles: ['provider-admin'],
    summary: 'Machines with a repair request: unclaimed or in repair, how long they waited; ?stuck=true for those past their SLA',
    query: z.strictObject({
      ...pageQuery,
      stuck: z
        .enum(['true', 'false'])
        .transform((v) => v === 'true')
        .optional(),
    }),
    responses: { 200: repairListResponse },
    handle: async ({ query }, ctx) => {
      const page = await listRepairs(ctx, query.stuck ?? false, query);
      return listResult(page.items, page.nextToken);
    },
  }),
];
