import type { Role } from '#domain/core/model.ts';
import type { PathValues } from '#test/support/local-site.ts';

// The table of test/e2e/auth-matrix.test.ts: who calls, and what each caller must get from each route the site
// serves (an exact status, and for problems the exact code), with the body and path values each route is called with.

export const otherOrg = 'globex';

/**
 * Callers that hold a valid token. `tenant` (acme) owns every resource the paths name; the tenant of another org and
 * the tenant with the targetedInstanceCreation capability (a repair tenant) ask for acme's resources under their
 * own org's path. Each fills `{org}` with its own org.
 */
export const callers = {
  tenant: { org: 'acme', roles: ['tenant'] },
  'tenant of another org': { org: otherOrg, roles: ['tenant'] },
  'tenant with capability': { org: 'fixit', roles: ['tenant'] },
  'provider-admin': { org: 'provider', roles: ['provider-admin'] },
  'site-agent': { org: 'site', roles: ['site-agent'] },
} as const satisfies Record<string, { org: string; roles: Role[] }>;
export type Caller = keyof typeof callers;

/** What every path names unless its row says otherwise: made by the test on its site. */
export interface Resources {
  instanceId: string;
  machineId: string;
  metaInstanceId: string;
  maintenanceId: string;
  rack: string;
  roster: Array<{ id: string }>;
  /** One resource per route that ends what it names: only its owner's call does, once. */
  doomed: { deleted: string; released: string; meta: string };
}

/** An exact status, and for problems the exact `code`. */
export type Outcome = number | readonly [status: number, code: string];
export type Row = Record<Caller, Outcome>;

const forbidden = [403, 'forbidden'] as const;
const notFound = [404, 'not-found'] as const;
const capabilityRequired = [403, 'capability-required'] as const;
const everyone = (outcome: Outcome): Row => ({
  tenant: outcome,
  'tenant of another org': outcome,
  'tenant with capability': outcome,
  'provider-admin': outcome,
  'site-agent': outcome,
});
const tenants = (tenant: Outcome, ofAnotherOrg: Outcome, withCapability: Outcome): Row => ({
  tenant,
  'tenant of another org': ofAnotherOrg,
  'tenant with capability': withCapability,
  'provider-admin': forbidden,
  'site-agent': forbidden,
});
const providerAdmin = (outcome: Outcome): Row => ({ ...everyone(forbidden), 'provider-admin': outcome });
const siteAgent = (outcome: Outcome): Row => ({ ...everyone(forbidden), 'site-agent': outcome });

export interface Expectation {
  row: Row;
  /** The JSON body every caller sends. */
  body?: (r: Resources) => unknown;
  /** Path values other than the kept resources. */
  path?: (r: Resources) => Partial<PathValues>;
}

const labels = () => ({ labels: { matrix: 'checked' } });

export const expectations: Record<string, Expectation> = {
  'GET /openapi.json': { row: everyone(200) },

  // Targeted creation on acme's (taken) machine: only the capability gets past the check, to find it taken.
  'POST /v2/org/{org}/nico/instance': {
    row: tenants(capabilityRequired, capabilityRequired, [409, 'machine-unavailable']),
    body: (r) => ({ machineId: r.machineId }),
  },
  'GET /v2/org/{org}/nico/instance': { row: tenants(200, 200, 200) },
  'GET /v2/org/{org}/nico/instance/{id}': { row: tenants(200, notFound, notFound) },
  'PATCH /v2/org/{org}/nico/instance/{id}': { row: tenants(200, notFound, notFound), body: labels },
  'DELETE /v2/org/{org}/nico/instance/{id}': { row: tenants(202, notFound, notFound), path: (r) => ({ instanceId: r.doomed.deleted }) },
  // The legacy release takes the org from the token: another org's instance id is not found there either.
  'POST /api/v1/instances/release': { row: tenants(202, notFound, notFound), body: (r) => ({ id: r.doomed.released }) },
  'GET /v2/org/{org}/nico/machine': { row: tenants(capabilityRequired, capabilityRequired, 200) },
  'GET /v2/org/{org}/nico/machine/{machineId}': { row: tenants(200, notFound, 200) },
  'PATCH /v2/org/{org}/nico/machine/{machineId}': { row: tenants(200, notFound, [403, 'not-machine-holder']), body: labels },
  // More h100s than the site has: judged the same for every tenant, and nothing is created.
  'POST /v2/org/{org}/nico/meta-instance': {
    row: tenants([422, 'unsatisfiable'], [422, 'unsatisfiable'], [422, 'unsatisfiable']),
    body: () => ({ machineType: 'h100', minNodes: 3 }),
  },
  'GET /v2/org/{org}/nico/meta-instance': { row: tenants(200, 200, 200) },
  // Each org's own counts and nodes: another org's path is 404 (the matrix's {org} check below).
  'GET /v2/org/{org}/nico/capacity': { row: tenants(200, 200, 200) },
  'GET /v2/org/{org}/nico/nodes': { row: tenants(200, 200, 200) },
  'GET /v2/org/{org}/nico/capacity-events': { row: tenants(200, 200, 200) },
  'GET /v2/org/{org}/nico/capacity/history': { row: tenants(200, 200, 200) },
  'GET /v2/org/{org}/nico/reservation': { row: tenants(200, 200, 200) },
  'GET /v2/org/{org}/nico/meta-instance/{id}': { row: tenants(200, notFound, notFound) },
  'DELETE /v2/org/{org}/nico/meta-instance/{id}': { row: tenants(202, notFound, notFound), path: (r) => ({ metaInstanceId: r.doomed.meta }) },
  // The kept instance is Ready (its maintenance waits for it): its owner's cycle is taken, nobody else finds it.
  'POST /v2/org/{org}/nico/instance/{id}/power': { row: tenants(202, notFound, notFound), body: () => ({ action: 'cycle' }) },
  // No member of that id: its owner reads the meta-instance and finds none; nobody else finds the meta-instance.
  'POST /v2/org/{org}/nico/meta-instance/{id}/replace': { row: tenants(notFound, notFound, notFound), body: () => ({ instanceId: 'i-unknown' }) },
  // Each org's own reports: another org's path is 404 (the matrix's {org} check below).
  'GET /v2/org/{org}/nico/repair-tickets': { row: tenants(200, 200, 200) },

  'GET /admin/meta-instances': { row: providerAdmin(200) },
  // Re-registering a machine as it is changes nothing.
  'POST /admin/machines': { row: providerAdmin(200), body: (r) => ({ machines: [{ id: r.machineId, machineType: 'gb200', rack: r.rack }] }) },
  'GET /admin/machines': { row: providerAdmin(200) },
  'GET /admin/machines/{id}': { row: providerAdmin(200) },
  'GET /admin/machines/{id}/history': { row: providerAdmin(200) },
  'GET /admin/machines/{id}/health-overrides': { row: providerAdmin(200) },
  'POST /admin/machines/{id}/health-overrides': { row: providerAdmin(201), body: () => ({ template: 'degraded', message: 'auth matrix' }) },
  'DELETE /admin/machines/{id}/health-overrides/{source}': { row: providerAdmin(notFound), path: () => ({ params: { source: 'out-for-repair' } }) },
  'PATCH /admin/machines/{id}/labels': { row: providerAdmin(200), body: labels },
  'PUT /admin/tenants/{org}': { row: providerAdmin(200), body: () => ({ capabilities: { targetedInstanceCreation: false } }) },
  'GET /admin/tenants/{org}': { row: providerAdmin(200) },
  'GET /admin/tenants/{org}/capacity/history': { row: providerAdmin(200) },
  'GET /admin/config': { row: providerAdmin(200) },
  'GET /admin/migrations': { row: providerAdmin(200) },
  // A table this release made is not pinned: starting its migrations changes nothing.
  'POST /admin/migrations/start': { row: providerAdmin(200), body: () => ({}) },
  'GET /admin/fleet/summary': { row: providerAdmin(200) },
  'GET /admin/fleet/repair-stats': { row: providerAdmin(200) },
  'GET /admin/fleet/racks': { row: providerAdmin(200) },
  'GET /admin/safety': { row: providerAdmin(200) },
  'POST /admin/safety/repair-storm/reset': { row: providerAdmin(200), body: () => ({}) },
  'GET /admin/repairs': { row: providerAdmin(200) },
  'GET /admin/audit': { row: providerAdmin(200) },
  // The kept machine is in open maintenance already: a second one on it is refused and changes nothing.
  'POST /admin/maintenance': {
    row: providerAdmin([409, 'maintenance-overlap']),
    body: (r) => ({
      kind: 'emergency',
      category: 'other',
      reason: 'auth matrix',
      scope: { machineIds: [r.machineId] },
      handBackBy: new Date(Date.now() + 86_400_000).toISOString(),
      windowMinutes: 60,
    }),
  },
  'GET /admin/maintenance': { row: providerAdmin(200) },
  // More h100s than the site has: refused whole, nothing reserved.
  'POST /admin/reservations': {
    row: providerAdmin([409, 'insufficient-capacity']),
    body: () => ({ org: 'acme', machineType: 'h100', count: 40 }),
  },
  'GET /admin/reservations': { row: providerAdmin(200) },
  'GET /admin/reservations/{id}': { row: providerAdmin(notFound) },
  'DELETE /admin/reservations/{id}': { row: providerAdmin(notFound) },
  'GET /admin/maintenance/{id}': { row: providerAdmin(200) },
  'POST /admin/maintenance/{id}/cancel': { row: providerAdmin(notFound), path: () => ({ maintenanceId: 'mnt-unknown' }) },
  'POST /admin/maintenance/{id}/resume': { row: providerAdmin([409, 'invalid-state']) },
  // The provider's own org asked for no deferral.
  'POST /admin/maintenance/{id}/deferrals/{org}': { row: providerAdmin(notFound), body: () => ({ decision: 'reject' }) },
  'GET /v2/org/{org}/nico/maintenance': { row: tenants(200, 200, 200) },
  'GET /v2/org/{org}/nico/maintenance/{id}': { row: tenants(200, notFound, notFound) },
  'POST /v2/org/{org}/nico/maintenance/{id}/hand-back': { row: tenants([422, 'not-held'], notFound, notFound), body: () => ({ instanceIds: ['i-unknown'] }) },
  'POST /v2/org/{org}/nico/maintenance/{id}/deferral': {
    row: tenants(202, notFound, notFound),
    body: () => ({ until: new Date(Date.now() + 30 * 86_400_000).toISOString(), reason: 'auth matrix' }),
  },
  // The kept instance's machine: a tenant holds it, so it is neither validated nor retired under them.
  'POST /admin/machines/{id}/validation': { row: providerAdmin([409, 'machine-in-use']) },
  'POST /admin/machines/{id}/retire': { row: providerAdmin([409, 'machine-in-use']), body: () => ({ reason: 'auth matrix' }) },

  // The whole roster, as the agent sends it; a partial one would mark machines silent.
  'POST /site/v1/heartbeats': { row: siteAgent(200), body: (r) => ({ machines: r.roster }) },
  'POST /site/v1/machines/{id}/cleanup': { row: siteAgent([409, 'invalid-state']), body: () => ({ ok: true }) },
  // The machine is held, not in maintenance work: the report changes nothing.
  'POST /site/v1/machines/{id}/maintenance': { row: siteAgent(200), body: (r) => ({ maintenanceId: r.maintenanceId, ok: true }) },
  'POST /site/v1/machines/{id}/validation': {
    row: siteAgent([409, 'stale-validation']),
    body: () => ({ validationId: 'v-not-asked', passed: true, results: [] }),
  },
};
