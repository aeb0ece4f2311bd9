import { finishCleanup } from '#domain/cleanup.ts';
import { heartbeatReceiptResponse, machineResponse } from '#domain/responses.ts';
import { cleanupReportBody, emptyQuery, params } from '#domain/schemas.ts';
import { receiveHeartbeat } from '#services/heartbeats.ts';
import { requireMachine } from '#services/instances.ts';
import { showMachine } from '#services/machines.ts';
import { heartbeatBody } from '#site/agent-contract.ts';
import { retryOnStale } from '#services/retry-on-stale.ts';
import { defineRoute, type Route } from '../route.ts';

export const siteAgentRoutes: Route[] = [
  defineRoute({
    operationId: 'post-heartbeats',
    method: 'POST',
    path: '/site/v1/heartbeats',
    roles: ['site-agent'],
    summary: "The site agent's heartbeat: every machine it sees, in one roster, with the health alerts it reports for them",
    query: emptyQuery,
    body: heartbeatBody,
    bodyRequired: true,
    responses: { 200: heartbeatReceiptResponse },
    handle: async ({ body }, ctx) => {
      const alerts = new Map(body.machines.flatMap((m) => (m.alerts?.length ? [[m.id, m.alerts] as const] : [])));
      const { stored, changedBuckets } = await receiveHeartbeat(ctx, body.machines.map((m) => m.id), alerts);
      return { status: 200, body: { received: body.machines.length, stored, rosterBucketsChanged: changedBuckets.length } };
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
    responses: { 200: machineResponse },
    errors: [[409, 'invalid-state']],
    handle: async ({ principal, params: p, body }, ctx) => {
      await retryOnStale(async () => {
        const machine = await requireMachine(ctx, p.id);
        const instance = machine.cleanup ? await ctx.store.getInstance(machine.cleanup.instanceId) : null;
        await ctx.store.commit(finishCleanup(machine, instance, body, principal.sub, ctx.clock.now()));
      });
      return { status: 200, body: await showMachine(ctx, p.id) };
    },
  }),
];
