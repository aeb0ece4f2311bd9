import { forbidden } from '#domain/core/rejection.ts';
import { repairCandidateListResponse, tenantMachineResponse } from '#domain/core/responses.ts';
import { labelsPatchBody, emptyQuery, params, tenantMachinesQuery } from '#domain/core/schemas.ts';
import { hasCapability } from '#services/instances.ts';
import { tenantPatchMachineLabels, tenantShowMachine } from '#services/machine-actions.ts';
import { listMachines } from '#services/machines.ts';
import { defineRoute, listResult, type Route } from '#http/route.ts';

const base = '/v2/org/{org}/nico/machine';

/** Repair tenants find machines awaiting repair, watch them, and report progress through labels. */
export const tenantMachineRoutes: Route[] = [
  defineRoute({
    operationId: 'list-machines-for-repair',
    method: 'GET',
    path: base,
    roles: ['tenant'],
    summary: 'Machines, e.g. those awaiting repair (?healthOverride=repair-request); needs targetedInstanceCreation',
    params: params.org,
    query: tenantMachinesQuery,
    // Repair candidates: the schema leaves out whose instance a machine holds.
    responses: { 200: repairCandidateListResponse },
    errors: [[403, 'capability-required']],
    handle: async ({ principal, query }, ctx) => {
      if (!(await hasCapability(ctx, principal))) throw forbidden('capability-required', 'listing machines needs the targetedInstanceCreation capability');
      const { limit, nextToken, healthOverride } = query;
      const page = await listMachines(ctx, { limit, nextToken }, { healthOverride });
      return listResult(page.items, page.nextToken);
    },
  }),
  defineRoute({
    operationId: 'get-machine',
    method: 'GET',
    path: `${base}/{machineId}`,
    roles: ['tenant'],
    summary: 'A machine the org holds an instance on, or any machine with targetedInstanceCreation',
    params: params.orgMachine,
    query: emptyQuery,
    responses: { 200: tenantMachineResponse },
    handle: async ({ principal, params: p }, ctx) => ({ status: 200, body: await tenantShowMachine(ctx, principal, p.machineId) }),
  }),
  defineRoute({
    operationId: 'update-machine',
    method: 'PATCH',
    path: `${base}/{machineId}`,
    roles: ['tenant'],
    summary: 'Set or remove machine labels (repair_status, repair_details, repair_eta) while holding its instance',
    params: params.orgMachine,
    query: emptyQuery,
    body: labelsPatchBody,
    bodyRequired: true,
    responses: { 200: tenantMachineResponse },
    errors: [[403, 'not-machine-holder']],
    handle: async ({ principal, params: p, body }, ctx) => ({ status: 200, body: await tenantPatchMachineLabels(ctx, principal, p.machineId, body.labels) }),
  }),
];
