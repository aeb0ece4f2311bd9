import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '#domain/model.ts';
import type { Route } from '#http/route.ts';
import { routes } from '#http/routes/index.ts';
import { createLocalTokenIssuer } from '#http/tokens.ts';
import { expectProblem, routeKey, routePath, startTestSite, type PathValues, type TestSite } from '#test/support/local-site.ts';

// API.md "Conventions", Auth: missing/invalid token 401; wrong role 403 (`forbidden`); an `{org}` path segment that
// is not the caller's org 404. The matrix is derived from the route table itself, so a route added to `routes`
// is covered without touching this file.

const routeTable: readonly Route[] = routes;

const allRoles: Role[] = ['tenant', 'provider-admin', 'site-agent'];
/** Each role's token carries its own org; path params are filled with the caller's org (API.md). */
const homeOrg: Record<Role, string> = { tenant: 'acme', 'provider-admin': 'provider', 'site-agent': 'site' };
const otherOrg = 'globex';

/** Tokens the local "API Gateway" must turn away with 401, each made for an otherwise allowed role. */
const invalidTokenKinds = ['malformed', 'expired', 'signed by another key', 'tampered payload', 'empty org claim', 'not a bearer scheme'] as const;
type InvalidTokenKind = (typeof invalidTokenKinds)[number];

let site: TestSite;
let values: Omit<PathValues, 'org'>;
const tokens = {} as Record<Role, string>;
let roleless: string;
const invalid = {} as Record<Role, Record<InvalidTokenKind, string>>;

beforeAll(async () => {
  site = await startTestSite();
  for (const role of allRoles) tokens[role] = await site.token(homeOrg[role], [role]);
  roleless = await site.issuer.mint({ sub: 'nobody', org: 'acme', roles: [] });
  const stranger = createLocalTokenIssuer({ issuer: site.issuer.issuer, audience: site.issuer.audience });
  for (const role of allRoles) {
    const subject = { sub: `${homeOrg[role]}-user`, org: homeOrg[role], roles: [role] };
    const [header, , signature] = tokens[role].split('.');
    const forged = Buffer.from(JSON.stringify({ ...subject, roles: allRoles, iss: site.issuer.issuer, aud: site.issuer.audience, exp: 4102444800 })).toString('base64url');
    invalid[role] = {
      malformed: 'Bearer not-a-jwt',
      expired: `Bearer ${await site.issuer.mint(subject, -60)}`,
      'signed by another key': `Bearer ${await stranger.mint(subject)}`,
      'tampered payload': `Bearer ${header}.${forged}.${signature}`,
      'empty org claim': `Bearer ${await site.issuer.mint({ ...subject, org: '' })}`,
      'not a bearer scheme': `Basic ${Buffer.from(`${subject.sub}:secret`).toString('base64')}`,
    };
  }

  // The positive calls must not trip over a missing capability (403 capability-required) either.
  const granted = await site.call('PUT', '/admin/tenants/acme', { token: tokens['provider-admin'], body: { capabilities: { targetedInstanceCreation: true } } });
  expect(granted.status, JSON.stringify(granted.body)).toBe(200);
  // Real resources for the path params: an instance of acme (and its machine) and a meta-instance of acme.
  await site.eventually(async () => (await site.call('GET', '/admin/machines?allocatable=true', { token: tokens['provider-admin'] })).body.items.length === 6);
  const instance = await site.call('POST', '/v2/org/acme/nico/instance', { token: tokens.tenant, body: { machineType: 'gb200', name: 'auth-matrix' } });
  expect(instance.status, JSON.stringify(instance.body)).toBe(201);
  values = { instanceId: instance.body.id, machineId: instance.body.machineId };
  // Only a path value here: auth is decided before the params are even read, so a placeholder would do too.
  const meta = await site.call('POST', '/v2/org/acme/nico/meta-instance', { token: tokens.tenant, body: { machineType: 'h100', minNodes: 1 } });
  if (meta.status === 201 && typeof meta.body?.id === 'string') values.metaInstanceId = meta.body.id;
});
afterAll(async () => site?.stop());

const pathAs = (route: Route, org: string) => routePath(route, { org, ...values });
const isOrgScoped = (route: Route) => route.path.startsWith('/v2/org/{org}/');

/** A body for a call that must be refused before the body is read: invalid JSON, so reading it first would show. */
const unreadBody = (route: Route) => (route.method === 'GET' ? {} : { body: '{"not json' });

describe('the matrix', () => {
  it('covers every route the site serves (as its OpenAPI document lists them)', async () => {
    expect(routeTable.length).toBeGreaterThan(0);
    const served = (await site.call('GET', '/openapi.json')).body as { paths: Record<string, object> };
    const documented = Object.entries(served.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`));
    expect(documented.sort()).toEqual(routeTable.map(routeKey).sort());
  });
});

describe.each(routeTable.map((route) => [routeKey(route), route] as const))('%s', (_key, route) => {
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

  it('no token → 401', async () => {
    const response = await site.call(route.method, pathAs(route, homeOrg[someAllowed]), unreadBody(route));
    expectProblem(response, 401);
  });

  it.each(invalidTokenKinds)('%s token → 401', async (kind) => {
    const response = await site.call(route.method, pathAs(route, homeOrg[someAllowed]), {
      ...unreadBody(route),
      headers: { authorization: invalid[someAllowed][kind] },
    });
    expectProblem(response, 401);
  });

  it('a valid token without any known role → 403 forbidden', async () => {
    const response = await site.call(route.method, pathAs(route, 'acme'), { token: roleless, ...unreadBody(route) });
    expectProblem(response, 403, 'forbidden');
  });

  if (refused.length > 0) {
    it.each(refused)('role %s (not allowed) → 403 forbidden', async (role) => {
      const response = await site.call(route.method, pathAs(route, homeOrg[role]), { token: tokens[role], ...unreadBody(route) });
      expectProblem(response, 403, 'forbidden');
    });
  }

  if (isOrgScoped(route)) {
    it.each(allowed)(`role %s naming another org in {org} → 404`, async (role) => {
      const response = await site.call(route.method, pathAs(route, otherOrg), { token: tokens[role], ...unreadBody(route) });
      expectProblem(response, 404);
    });
  }

  it.each(allowed)('role %s on its own org → no auth error', async (role) => {
    const response = await site.call(route.method, pathAs(route, homeOrg[role]), {
      token: tokens[role],
      ...(route.body ? { body: {} } : {}),
    });
    expect([401, 403], `${response.status} ${JSON.stringify(response.body)}`).not.toContain(response.status);
    expect(response.status, JSON.stringify(response.body)).toBeLessThan(500);
  });
});
