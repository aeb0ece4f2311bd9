import { finishCleanup } from '#domain/instances/cleanup.ts';
import { heartbeatReceiptResponse, machineResponse } from '#domain/core/responses.ts';
import { cleanupReportBody, emptyQuery, heartbeatBody, params } from '#domain/core/schemas.ts';
import { receiveHeartbeat } from '#services/heartbeats.ts';
import { machineView } from '#domain/machines/machines.ts';
import { notFound } from '#domain/core/rejection.ts';
import { heartbeatViewOf } from '#runtime/heartbeat-view.ts';
import { retryOnStale } from '#runtime/retry-on-stale.ts';
import { HEARTBEAT_MAX_BODY_BYTES } from '#site/agent-contract.ts';
import { defineRoute, type Route } from '#http/route.ts';

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
    maxBodyBytes: HEARTBEAT_MAX_BODY_BYTES,
    errors: [[422, 'roster-part-mismatch']],
    responses: { 200: heartbeatReceiptResponse },
    handle: async ({ body }, ctx) => {
      const alerts = new Map(body.machines.flatMap((m) => (m.alerts?.length ? [[m.id, m.alerts] as const] : [])));
      const { stored, changedBuckets } = await receiveHeartbeat(
        ctx,
        body.machines.map((m) => m.id),
        alerts,
        body.part,
      );
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
      // The machine and the site heartbeat (for the answer's view) in one read; the answer is the machine as this
      // commit wrote it, not read again.
      const machine = await retryOnStale(async () => {
        const read = await ctx.store.getRecords({ machines: [p.id], siteHeartbeat: true });
        const stored = read.machines.get(p.id);
        if (!stored) throw notFound(`machine ${p.id}`);
        const instance = stored.cleanup ? await ctx.store.getInstance(stored.cleanup.instanceId) : null;
        const change = finishCleanup(stored, instance, body, principal.sub, ctx.clock.now());
        await ctx.store.commit(change);
        const written = change.machines?.find((pair) => pair.after.id === p.id);
        return { heartbeat: read.siteHeartbeat ?? null, machine: written ? { ...written.after, version: stored.version + 1 } : stored };
      });
      return { status: 200, body: machineView(machine.machine, heartbeatViewOf(ctx, machine.heartbeat), ctx.clock.now()) };
    },
  }),
];
