import * as z from 'zod';
import { finishCleanup } from '#domain/cleanup.ts';
import { cleanupReportBody, emptyQuery, heartbeatBody, params } from '#domain/schemas.ts';
import type { AppContext } from '#services/context.ts';
import { receiveHeartbeat } from '#services/heartbeats.ts';
import { requireMachine } from '#services/instances.ts';
import { showMachine } from '#services/machines.ts';
import { retryOnStale } from '#services/retry-on-stale.ts';
import { defineRoute, type Route } from '../route.ts';

export function siteAgentRoutes(ctx: AppContext): Route[] {
  return [
    defineRoute({
      operationId: 'post-heartbeats',
      method: 'POST',
      path: '/site/v1/heartbeats',
      roles: ['site-agent'],
      summary: "The site agent's heartbeat: every machine it sees, in one roster",
      query: emptyQuery,
      body: heartbeatBody,
      bodyRequired: true,
      response: z.object({ received: z.number().int(), stored: z.boolean(), livenessChanges: z.number().int() }),
      handle: async ({ body }) => {
        const result = await receiveHeartbeat(ctx, body.machines.map((m) => m.id));
        return { status: 200, body: { received: body.machines.length, ...result } };
      },
    }),
    defineRoute({
      operationId: 'report-cleanup',
      method: 'POST',
      path: '/site/v1/machines/{id}/cleanup',
      roles: ['site-agent'],
      summary: 'The site agent reports that it sanitized a machine (or failed to)',
      params: params.machine,
      query: emptyQuery,
      body: cleanupReportBody,
      bodyRequired: true,
      errors: [[409, 'invalid-state']],
      handle: async ({ principal, params: p, body }) => {
        await retryOnStale(async () => {
          const machine = await requireMachine(ctx, p.id);
          const instance = machine.cleanup ? await ctx.store.getInstance(machine.cleanup.instanceId) : null;
          await ctx.store.commit(finishCleanup(machine, instance, body, principal.sub, ctx.clock.now()));
        });
        return { status: 200, body: await showMachine(ctx, p.id) };
      },
    }),
  ];
}
