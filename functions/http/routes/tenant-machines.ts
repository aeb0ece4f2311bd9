import { labelsPatchBody, emptyQuery, params, tenantMachinesQuery } from '#domain/schemas.ts';
import { forbidden } from '#domain/rejection.ts';
import type { AppContext } from '#services/context.ts';
import { hasCapability } from '#services/instances.ts';
import { tenantPatchMachineLabels, tenantShowMachine } from '#services/machine-actions.ts';
import { listMachines } from '#services/machines.ts';
import { defineRoute, listResult, type Route } from '../route.ts';

const base = '/v2/org/{org}/nico/machine';

/** Repair tenants find machines awaiting repair, watch them, and report progress through labels. */
export function tenantMachineRoutes(ctx: AppContext): Route[] {
  return [
    defineRoute({
      operationId: 'list-machines-for-repair',
      method: 'GET',
      path: base,
      roles: ['tenant'],
      summary: 'Machines, e.g. those awaiting repair (?healthOverride=repair-request); needs targetedInstanceCreation',
      params: params.org,
      query: tenantMachinesQuery,
      errors: [[403, 'capability-required']],
      handle: async ({ principal, query }) => {
        if (!(await hasCapability(ctx, principal))) throw forbidden('capability-required', 'listing machines needs the targetedInstanceCreation capability');
        const { limit, nextToken, healthOverride } = query;
        const page = await listMachines(ctx, { limit, nextToken }, { healthOverride });
        const items = page.items.map(({ instanceId: _hidden, ...machine }) => machine);
        return listResult(items, page.nextToken);
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
      handle: async ({ principal, params: p }) => ({ status: 200, body: await tenantShowMachine(ctx, principal, p.machineId) }),
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
      errors: [[403, 'not-machine-holder']],
      handle: async ({ principal, params: p, body }) => ({ status: 200, body: await tenantPatchMachineLabels(ctx, principal, p.machineId, body.labels) }),
    }),
  ];
}
