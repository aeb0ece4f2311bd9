import { afterAll, describe, expect, it } from 'vitest';
import type { Role } from '#domain/core/model.ts';
import { createLocalTokenIssuer } from '#http/tokens.ts';
import { callers, expectations, otherOrg, type Caller, type Expectation, type Outcome, type Resources } from '#test/support/auth-matrix-table.ts';
import { expectGatewayAnswer, expectProblem, routePath, startTestSite } from '#test/support/local-site.ts';

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
const resources: Resources = {
  instanceId: kept.id,
  machineId: kept.machineId,
  metaInstanceId: await metaInstance(),
  maintenanceId: await maintenanceOnKept(),
  rack: (await site.call('GET', `/admin/machines/${kept.machineId}`, { token: admin })).body.rack as string,
  roster: ((await site.call('GET', '/admin/machines?limit=500', { token: admin })).body.items as Array<{ id: string }>).map((m) => ({ id: m.id })),
  /** One resource per route that ends what it names: only its owner's call does, once. */
  doomed: { deleted: (await readyInstance('doomed-delete')).id, released: (await readyInstance('doomed-release')).id, meta: await metaInstance() },
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
