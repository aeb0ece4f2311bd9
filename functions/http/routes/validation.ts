import { machineResponse, machineValidationResponse } from '#domain/core/responses.ts';
import { emptyQuery, params, validationReportBody } from '#domain/core/schemas.ts';
import { machineView } from '#domain/machines/machines.ts';
import { loadHeartbeatView } from '#runtime/heartbeat-view.ts';
import { reportValidation, requestProviderValidation } from '#services/validation.ts';
import { defineRoute, type Route } from '#http/route.ts';

/** Validated return (docs/api.md "Validation"): a provider's demand (AdminApi). */
export const adminValidationRoutes: Route[] = [
  defineRoute({
    operationId: 'request-machine-validation',
    method: 'POST',
    path: '/admin/machines/{id}/validation',
    roles: ['provider-admin'],
    summary: 'Ask the site agent to validate the machine (reason provider); the validation running already is the answer to a repeat',
    params: params.machine,
    query: emptyQuery,
    responses: { 202: machineValidationResponse },
    errors: [[409, 'machine-in-use']],
    handle: async ({ requester, params: p }, ctx) => ({ status: 202, body: await requestProviderValidation(ctx, p.id, requester) }),
  }),
];

/** Validated return: the site agent's report of a validation it was asked for (SiteAgentApi). */
export const siteAgentValidationRoutes: Route[] = [
  defineRoute({
    operationId: 'report-validation',
    method: 'POST',
    path: '/site/v1/machines/{id}/validation',
    roles: ['site-agent'],
    summary: 'The site agent reports a validation it was asked for: passed returns the machine, failed quarantines it as a reported fault',
    params: params.machine,
    query: emptyQuery,
    body: validationReportBody,
    bodyRequired: true,
    responses: { 200: machineResponse },
    errors: [[409, 'stale-validation']],
    handle: async ({ params: p, body }, ctx) => {
      const machine = await reportValidation(ctx, p.id, body);
      return { status: 200, body: machineView(machine, await loadHeartbeatView(ctx), ctx.clock.now()) };
    },
  }),
];
