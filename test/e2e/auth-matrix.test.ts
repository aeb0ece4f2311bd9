import { afterAll, describe, expect, it } from 'vitest';
import type { Role } from '#domain/model.ts';
import { createLocalTokenIssuer } from '#http/tokens.ts';
import { expectGatewayAnswer, expectProblem, routePath, startTestSite, type PathValues } from '#test/support/local-site.ts';

// API.md "Conventions", Auth: missing/invalid token 401; wrong role or missing capability 403; another org's
// resource, or an `{org}` path segment that is not the caller's org, 404. The routes come from the site's own
// /openapi.json (read before the tests are collected), so a route added to the API is in this matrix at once, and
// fails it until the table below says what every caller gets from it.

// ---- the site, its routes and its callers ----------------------------------------------------------------

const site = await startTestSite();
afterAll(async () => site.stop());

interface ServedRoute {
  method: string;
  path: string;
  roles: Role[] | 'public';
}
const routeKey = (route: ServedRoute) => `${route.method} ${route.path}`;

const httpMethods = new Set(['get', 'put', 'post', 'patch', 'delete']);
const servedDocument = await site.call('GET', '/openapi.json');
const served: ServedRoute[] = Object.entries(servedDocument.body.paths as Record<string, Record<string, { 'x-fleetward-roles': string[] }>>).flatMap(
  ([path, item]) =>
    Object.entries(item)
      .filter(([method]) => httpMethods.has(method))
      .map(([method, op]) => {
        const roles = op['x-fleetward-roles'];
        return { method: method.toUpperCase(), path, roles: roles.includes('public') ? ('public' as const) : (roles as Role[]) };
      }),
);

const allRoles: Role[] = ['tenant', 'provider-admin', 'site-agent'];
const otherOrg = 'globex';

/**
 * Callers that hold a valid token. `tenant` (acme) owns every resource the paths name; the tenant of another org and
 * the tenant with the targetedInstanceCreation capability (a repair tenant) ask for acme's resources under their
 * own org's path. Each fills `{org}` with its own org.
 */
const callers = {
  tenant: { org: 'acme', roles: ['tenant'] },
  'tenant of another org': { org: otherOrg, roles: ['tenant'] },
  'tenant with capability': { org: 'fixit', roles: ['tenant'] },
  'provider-admin': { org: 'provider', roles: ['provider-admin'] },
  'site-agent': { org: 'site', roles: ['site-agent'] },
} as const satisfies Record<string, { org: string; roles: Role[] }>;
type Caller = keyof typeof callers;
const callerNames = Object.keys(callers) as Caller[];
const tokens = {} as Record<Caller, string>;
for (const caller of callerNames) tokens[caller] = await site.token(callers[caller].org, [...callers[caller].roles]);

/** Tokens the local "API Gateway" must turn away with 401, each made for an otherwise allowed role. */
const invalidTokenKinds = ['malformed', 'expired', 'signed by another key', 'tampered payload', 'empty org claim', 'not a bearer scheme'] as const;
type InvalidTokenKind = (typeof invalidTokenKinds)[number];
/** The org whose path each role's checks below use: the capable tenant, so positive calls pass its capability check. */
const homeOrg: Record<Role, string> = { tenant: callers['tenant with capability'].org, 'provider-admin': 'provider', 'site-agent': 'site' };
const roleTokens: Record<Role, string> = {
  tenant: tokens['tenant with capability'],
  'provider-admin': tokens['provider-admin'],
  'site-agent': tokens['site-agent'],
};
const roleless = await site.issuer.mint({ sub: 'nobody', org: 'acme', roles: [] });
const invalid = {} as Record<Role, Record<InvalidTokenKind, string>>;
const stranger = createLocalTokenIssuer({ issuer: site.issuer.issuer, audience: site.issuer.audience });
for (const role of allRoles) {
  const subject = { sub: `${homeOrg[role]}-user`, org: homeOrg[role], roles: [role] };
  const [header, , signature] = roleTokens[role].split('.');
  const forged = Buffer.from(JSON.stringify({ ...subject, roles: allRoles, iss: site.issuer.issuer, aud: site.issuer.audience, exp: 4102444800 })).toString(
    'base64url',
  );
  invalid[role] = {
    malformed: 'Bearer not-a-jwt',
    expired: `Bearer ${await site.issuer.mint(subject, -60)}`,
    'signed by another key': `Bearer ${await stranger.mint(subject)}`,
    'tampered payload': `Bearer ${header}.${forged}.${signature}`,
    'empty org claim': `Bearer ${await site.issuer.mint({ ...subject, org: '' })}`,
    'not a bearer scheme': `Basic ${Buffer.from(`${subject.sub}:secret`).toString('base64')}`,
  };
}

// ---- the resources the paths name ------------------------------------------------------------------------

const admin = tokens['provider-admin'];
const granted = await site.call('PUT', `/admin/tenants/${callers['tenant with capability'].org}`, {
  token: admin,
  body: { capabilities: { targetedInstanceCreation: true } },
});
expect(granted.status, JSON.stringify(granted.body)).toBe(200);
await site.eventually(async () => (await site.call('GET', '/admin/machines?allocatable=true', { token: admin })).body.items.length === 6);

async function readyInstance(name: string): Promise<{ id: string; machineId: string }> {
  const created = await site.call('POST', '/v2/org/acme/nico/instance', { token: tokens.tenant, body: { machineType: 'gb200', name } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  await site.eventually(
    async () => (await site.call('GET', `/v2/org/acme/nico/instance/${created.body.id}`, { token: tokens.tenant })).body.status === 'Ready',
  );
  return created.body;
}
async function metaInstance(): Promise<string> {
  const created = await site.call('POST', '/v2/org/acme/nico/meta-instance', { token: tokens.tenant, body: { machineType: 'h100', minNodes: 1 } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.id;
}

const kept = await readyInstance('auth-matrix');

/** Maintenance declared on the kept instance's machine, once acme holds it there (the fan-out is asynchronous). */
async function maintenanceOnKept(): Promise<string> {
  const handBackBy = new Date(Date.now() + 15 * 86_400_000).toISOString();
  const body = { kind: 'planned', category: 'firmware', reason: 'auth matrix', scope: { machineIds: [kept.machineId] }, handBackBy, windowMinutes: 60 };
  const declared = await site.call('POST', '/admin/maintenance', { token: admin, body });
  expect(declared.status, JSON.stringify(declared.body)).toBe(201);
  for (let tries = 0; tries < 100; tries++) {
    const shown = await site.call('GET', `/admin/maintenance/${declared.body.id}`, { token: admin });
    if (shown.body.machines[kept.machineId].phase === 'held') return declared.body.id;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the maintenance never reached the kept machine');
}
/** What every path names unless its row says otherwise; no call below ends these. */
const resources = {
  instanceId: kept.id,
  machineId: kept.machineId,
  metaInstanceId: await metaInstance(),
  maintenanceId: await maintenanceOnKept(),
  rack: (await site.call('GET', `/admin/machines/${kept.machineId}`, { token: admin })).body.rack as string,
  roster: ((await site.call('GET', '/admin/machines?limit=500', { token: admin })).body.items as Array<{ id: string }>).map((m) => ({ id: m.id })),
  /** One resource per route that ends what it names: only its owner's call does, once. */
  doomed: { deleted: (await readyInstance('doomed-delete')).id, released: (await readyInstance('doomed-release')).id, meta: await metaInstance() },
};
type Resources = typeof resources;

// ---- the matrix ------------------------------------------------------------------------------------------

/** An exact status, and for problems the exact `code`. */
type Outcome = number | readonly [status: number, code: string];
type Row = Record<Caller, Outcome>;

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

interface Expectation {
  row: Row;
  /** The JSON body every caller sends. */
  body?: (r: Resources) => unknown;
  /** Path values other than the kept resources. */
  path?: (r: Resources) => Partial<PathValues>;
}

const labels = () => ({ labels: { matrix: 'checked' } });

const expectations: Record<string, Expectation> = {
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

const pathFor = (route: ServedRoute, org: string, expectation?: Expectation) => routePath(route, { org, ...resources, ...expectation?.path?.(resources) });

function expectOutcome(response: Awaited<ReturnType<typeof site.call>>, outcome: Outcome) {
  if (typeof outcome === 'number') {
    expect(response.status, JSON.stringify(response.body)).toBe(outcome);
    return;
  }
  expectProblem(response, outcome[0], outcome[1]);
}

describe('the matrix', () => {
  it('has a row for exactly the routes the site serves', () => {
    expect(served.length).toBeGreaterThan(0);
    expect(served.map(routeKey).sort()).toEqual(Object.keys(expectations).sort());
  });
});

describe.each(served.map((route) => [routeKey(route), route] as const))('%s', (key, route) => {
  const expectation = expectations[key];
  const isPublic = route.roles === 'public';

  it('has a row in the matrix', () => {
    expect(expectation, `${key} is served but the matrix does not say what each caller gets`).toBeDefined();
  });

  it('no token → exact status', async () => {
    const response = await site.call(route.method, pathFor(route, 'acme', expectation), expectation?.body ? { body: expectation.body(resources) } : {});
    if (isPublic) expectOutcome(response, 200);
    else expectGatewayAnswer(response, 401, 'missing');
  });

  // Public routes have no authorizer in API Gateway: a token there is not looked at.
  it(isPublic ? 'bad token → served anyway' : "bad token → API Gateway's 401 invalid_token", async () => {
    const response = await site.call(route.method, pathFor(route, 'acme', expectation), {
      ...(expectation?.body ? { body: expectation.body(resources) } : {}),
      headers: { authorization: invalid.tenant['signed by another key'] },
    });
    if (isPublic) expectOutcome(response, 200);
    else expectGatewayAnswer(response, 401, 'invalid');
  });

  if (!expectation) return;
  it.each(callerNames)('%s → exact status', async (caller) => {
    const response = await site.call(route.method, pathFor(route, callers[caller].org, expectation), {
      token: tokens[caller],
      ...(expectation.body ? { body: expectation.body(resources) } : {}),
    });
    expectOutcome(response, expectation.row[caller]);
  });
});

// ---- what every protected route does before it reads anything (derived from its declared roles) ---------------

const pathAs = (route: ServedRoute, org: string) => routePath(route, { org, ...resources });
const isOrgScoped = (route: ServedRoute) => route.path.startsWith('/v2/org/{org}/');

/** A body for a call that must be refused before the body is read: invalid JSON, so reading it first would show. */
const unreadBody = (route: ServedRoute) => (route.method === 'GET' ? {} : { body: '{"not json' });

describe.each(served.map((route) => [routeKey(route), route] as const))('%s before it reads anything', (_key, route) => {
  if (route.roles === 'public') {
    it('answers a caller without a token without an auth error', async () => {
      const response = await site.call(route.method, pathAs(route, 'acme'));
      expect([401, 403], JSON.stringify(response.body)).not.toContain(response.status);
    });
    return;
  }
  const allowed = route.roles;
  const refused = allRoles.filter((role) => !allowed.includes(role));
  const someAllowed = allowed[0]!;

  it("no token → API Gateway's 401", async () => {
    const response = await site.call(route.method, pathAs(route, homeOrg[someAllowed]), unreadBody(route));
    expectGatewayAnswer(response, 401, 'missing');
  });

  it.each(invalidTokenKinds)('%s token → 401', async (kind) => {
    const response = await site.call(route.method, pathAs(route, homeOrg[someAllowed]), {
      ...unreadBody(route),
      headers: { authorization: invalid[someAllowed][kind] },
    });
    // The authorizer checks the token, not our claims: a well-signed token without an org reaches Fleetward.
    if (kind === 'empty org claim') expectProblem(response, 401, 'unauthenticated');
    else expectGatewayAnswer(response, 401, 'invalid');
  });

  it('a valid token without any known role → 403 forbidden', async () => {
    const response = await site.call(route.method, pathAs(route, 'acme'), { token: roleless, ...unreadBody(route) });
    expectProblem(response, 403, 'forbidden');
  });

  if (refused.length > 0) {
    it.each(refused)('role %s (not allowed) → 403 forbidden', async (role) => {
      const response = await site.call(route.method, pathAs(route, homeOrg[role]), { token: roleTokens[role], ...unreadBody(route) });
      expectProblem(response, 403, 'forbidden');
    });
  }

  if (isOrgScoped(route)) {
    it.each(allowed)(`role %s naming another org in {org} → 404`, async (role) => {
      const response = await site.call(route.method, pathAs(route, otherOrg), { token: roleTokens[role], ...unreadBody(route) });
      expectProblem(response, 404);
    });
  }

  it.each(allowed)('role %s on its own org → no auth error', async (role) => {
    const response = await site.call(route.method, pathAs(route, homeOrg[role]), {
      token: roleTokens[role],
      ...(route.method !== 'GET' ? { body: {} } : {}),
    });
    expect([401, 403], `${response.status} ${JSON.stringify(response.body)}`).not.toContain(response.status);
    expect(response.status, JSON.stringify(response.body)).toBeLessThan(500);
  });
});

describe('after the matrix', () => {
  it("ended only what its owner's calls ended", async () => {
    const status = async (kind: 'instance' | 'meta-instance', id: string) => {
      const response = await site.call('GET', `/v2/org/acme/nico/${kind}/${id}`, { token: tokens.tenant });
      return response.status === 404 ? 'gone' : response.body.status;
    };
    expect(await status('instance', resources.instanceId)).toBe('Ready');
    expect(['Placing', 'Ready']).toContain(await status('meta-instance', resources.metaInstanceId));
    for (const id of [resources.doomed.deleted, resources.doomed.released]) expect(['Terminating', 'Terminated']).toContain(await status('instance', id));
    expect(['Deleting', 'gone']).toContain(await status('meta-instance', resources.doomed.meta));
  });
});
