import type { SiteConfig } from '#config/site-config.ts';
import type { HistoryEntry, Tenant } from '#domain/model.ts';
import type { addHealthOverride, patchMachineLabels, tenantPatchMachineLabels, tenantShowMachine } from '#services/machine-actions.ts';
import type { listMachines, showMachine } from '#services/machines.ts';
import type { createMetaInstance, deleteMetaInstance, listMetaInstances, showMetaInstance } from '#services/meta-instances.ts';
import type { resetRepairStorm, showSafety } from '#services/safety.ts';
import type { listRepairs } from '#services/stuck-repairs.ts';

// TEMPORARY: the answers of the routes whose OpenAPI document has no response schema yet, as the services the
// handlers call return them (types only; no shape is restated here). client/api.ts uses an entry only while the
// generated type is `unknown`; once a route declares its response schema and `npm run gen:client` ran, its entry
// is a compile error (client/api.ts, `NoStalePending`): delete it. When every route declares one, delete this file and
// `Pending` in client/api.ts.

type Returned<F extends (...args: never[]) => unknown> = Awaited<ReturnType<F>>;
type Page<T> = { items: T[]; nextToken?: string };
type Machine = Returned<typeof showMachine>;
type MetaInstance = Returned<typeof showMetaInstance>;

export interface PendingResponses {
  '/v2/org/{org}/nico/machine': { get: Page<Omit<Machine, 'instanceId'>> };
  '/v2/org/{org}/nico/machine/{machineId}': { get: Returned<typeof tenantShowMachine>; patch: Returned<typeof tenantPatchMachineLabels> };
  '/v2/org/{org}/nico/meta-instance': { get: Returned<typeof listMetaInstances>; post: Returned<typeof createMetaInstance> };
  '/v2/org/{org}/nico/meta-instance/{id}': { get: MetaInstance; delete: Returned<typeof deleteMetaInstance> };
  '/admin/meta-instances': { get: Returned<typeof listMetaInstances> };
  '/admin/machines': { get: Returned<typeof listMachines> };
  '/admin/machines/{id}': { get: Machine };
  '/admin/machines/{id}/history': { get: Page<HistoryEntry> };
  '/admin/machines/{id}/health-overrides': { get: { items: Machine['healthOverrides'] }; post: Returned<typeof addHealthOverride> };
  '/admin/machines/{id}/labels': { patch: Returned<typeof patchMachineLabels> };
  '/admin/tenants/{org}': { put: Pick<Tenant, 'org' | 'capabilities' | 'updatedAt'> };
  '/admin/config': { get: { version: string; config: SiteConfig } };
  '/admin/safety': { get: Returned<typeof showSafety> };
  '/admin/safety/repair-storm/reset': { post: Returned<typeof resetRepairStorm> };
  '/admin/repairs': { get: Returned<typeof listRepairs> };
}
