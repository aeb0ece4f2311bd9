import {
  handBackResponse,
  maintenanceListResponse,
  maintenanceReportResponse,
  maintenanceResponse,
  tenantMaintenanceListResponse,
  tenantMaintenanceResponse,
} from '#domain/maintenance/maintenance-responses.ts';
import {
  declareMaintenanceBody,
  deferralDecisionBody,
  deferralRequestBody,
  emptyQuery,
  handBackBody,
  maintenanceListQuery,
  maintenanceReportBody,
  params,
} from '#domain/core/schemas.ts';
import { cancel, declare, decideOrgDeferral, listMaintenances, reportMaintenanceWork, resume, showMaintenance } from '#services/maintenance.ts';
import { askForDeferral, handBack, listForOrg, showForOrg } from '#services/tenant-maintenance.ts';
import { defineRoute, listResult, type Route } from '#http/route.ts';

const admin = '/admin/maintenance';
const tenant = '/v2/org/{org}/nico/maintenance';

/** Declared maintenance: the provider's routes, the tenant's, and the site agent's report (API.md "Maintenance"). */
/** The provider's: declare, list, show, cancel, resume, decide deferrals. */
export const adminMaintenanceRoutes: Route[] = [
  defineRoute({
    operationId: 'declare-maintenance',
    method: 'POST',
    path: admin,
    roles: ['provider-admin'],
    summary: 'Declare planned or emergency maintenance on machines, racks or NVLink domains; the machines are told asynchronously',
    query: emptyQuery,
    body: declareMaintenanceBody,
    bodyRequired: true,
    responses: { 201: maintenanceResponse },
    errors: [
      [422, 'unknown-scope'],
      [422, 'empty-scope'],
      [422, 'scope-too-large'],
      [422, 'hand-back-too-soon'],
      [409, 'maintenance-overlap'],
    ],
    handle: async ({ requester, body }, ctx) => ({ status: 201, body: await declare(ctx, body, requester) }),
  }),
  defineRoute({
    operationId: 'list-maintenance',
    method: 'GET',
    path: admin,
    roles: ['provider-admin'],
    summary: 'Every maintenance, newest first, optionally of one state',
    query: maintenanceListQuery,
    responses: { 200: maintenanceListResponse },
    handle: async ({ query }, ctx) => {
      const page = await listMaintenances(ctx, query);
      return listResult(page.items, page.nextToken);
    },
  }),
  defineRoute({
    operationId: 'get-maintenance',
    method: 'GET',
    path: `${admin}/{id}`,
    roles: ['provider-admin'],
    summary: 'One maintenance, with every machine’s course and its history (newest first)',
    params: params.maintenance,
    query: emptyQuery,
    responses: { 200: maintenanceResponse },
    handle: async ({ params: p }, ctx) => ({ status: 200, body: await showMaintenance(ctx, p.id) }),
  }),
  defineRoute({
    operationId: 'cancel-maintenance',
    method: 'POST',
    path: `${admin}/{id}/cancel`,
    roles: ['provider-admin'],
    summary: 'Cancel: machines not yet admitted lose the override, instances the notice; admitted ones finish',
    params: params.maintenance,
    query: emptyQuery,
    responses: { 200: maintenanceResponse },
    errors: [[409, 'invalid-state']],
    handle: async ({ requester, params: p }, ctx) => ({ status: 200, body: await cancel(ctx, p.id, requester) }),
  }),
  defineRoute({
    operationId: 'resume-maintenance',
    method: 'POST',
    path: `${admin}/{id}/resume`,
    roles: ['provider-admin'],
    summary: 'Resume a halted maintenance: machines are admitted again',
    params: params.maintenance,
    query: emptyQuery,
    responses: { 200: maintenanceResponse },
    errors: [[409, 'invalid-state']],
    handle: async ({ requester, params: p }, ctx) => ({ status: 200, body: await resume(ctx, p.id, requester) }),
  }),
  defineRoute({
    operationId: 'decide-maintenance-deferral',
    method: 'POST',
    path: `${admin}/{id}/deferrals/{org}`,
    roles: ['provider-admin'],
    summary: "Accept or reject an org's deferral; accepting moves that org's deadline",
    params: params.maintenanceOrg,
    query: emptyQuery,
    body: deferralDecisionBody,
    bodyRequired: true,
    responses: { 200: maintenanceResponse },
    errors: [[409, 'invalid-state']],
    handle: async ({ requester, params: p, body }, ctx) => ({ status: 200, body: await decideOrgDeferral(ctx, p.id, p.org, body.decision, requester) }),
  }),
];

/** A tenant's: the maintenance touching its instances, hand-back and deferral. */
export const tenantMaintenanceRoutes: Route[] = [
  defineRoute({
    operationId: 'list-org-maintenance',
    method: 'GET',
    path: tenant,
    roles: ['tenant'],
    summary: "Open maintenance touching the org's instances (only its own machines and deferral shown)",
    params: params.org,
    query: emptyQuery,
    responses: { 200: tenantMaintenanceListResponse },
    handle: async ({ principal }, ctx) => ({ status: 200, body: { items: await listForOrg(ctx, principal.org) } }),
  }),
  defineRoute({
    operationId: 'get-org-maintenance',
    method: 'GET',
    path: `${tenant}/{id}`,
    roles: ['tenant'],
    summary: "One maintenance as the org sees it; 404 when it touches none of the org's instances",
    params: params.orgMaintenance,
    query: emptyQuery,
    responses: { 200: tenantMaintenanceResponse },
    handle: async ({ principal, params: p }, ctx) => ({ status: 200, body: await showForOrg(ctx, principal.org, p.id) }),
  }),
  defineRoute({
    operationId: 'hand-back-maintenance',
    method: 'POST',
    path: `${tenant}/{id}/hand-back`,
    roles: ['tenant'],
    summary: 'Hand instances back early: each is released, and its machine goes into maintenance after cleanup',
    params: params.orgMaintenance,
    query: emptyQuery,
    body: handBackBody,
    bodyRequired: true,
    responses: { 202: handBackResponse },
    errors: [[422, 'not-held']],
    handle: async ({ principal, params: p, body }, ctx) => ({ status: 202, body: await handBack(ctx, principal, p.id, body.instanceIds) }),
  }),
  defineRoute({
    operationId: 'request-maintenance-deferral',
    method: 'POST',
    path: `${tenant}/{id}/deferral`,
    roles: ['tenant'],
    summary: 'Ask for more time to hand back; the provider decides',
    params: params.orgMaintenance,
    query: emptyQuery,
    body: deferralRequestBody,
    bodyRequired: true,
    responses: { 202: tenantMaintenanceResponse },
    errors: [
      [409, 'deferral-not-allowed'],
      [409, 'nothing-held'],
      [409, 'invalid-state'],
      [422, 'deferral-too-short'],
    ],
    handle: async ({ principal, params: p, body }, ctx) => ({ status: 202, body: await askForDeferral(ctx, principal, p.id, body.until, body.reason) }),
  }),
];

/** The site agent's report of its maintenance work. */
export const siteAgentMaintenanceRoutes: Route[] = [
  defineRoute({
    operationId: 'report-maintenance',
    method: 'POST',
    path: '/site/v1/machines/{id}/maintenance',
    roles: ['site-agent'],
    summary: "The site agent reports a machine's maintenance work done (ok) or failed",
    params: params.machine,
    query: emptyQuery,
    body: maintenanceReportBody,
    bodyRequired: true,
    responses: { 200: maintenanceReportResponse },
    handle: async ({ params: p, body }, ctx) => {
      const { changed, maintenance } = await reportMaintenanceWork(ctx, p.id, body);
      return { status: 200, body: { changed, state: maintenance.state, ...(maintenance.machines[p.id] ? { phase: maintenance.machines[p.id]!.phase } : {}) } };
    },
  }),
];
