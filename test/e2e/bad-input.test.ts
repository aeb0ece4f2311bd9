import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MAX_BODY_BYTES } from '#http/route.ts';
import type { Role } from '#domain/core/model.ts';
import type { Route } from '#http/route.ts';
import { expectGatewayAnswer, expectProblem, routeKey, startTestSite, TEST_SWEEP_INTERVAL_MS, testConfig, type TestSite } from '#test/support/local-site.ts';
import { afterNextSweepWithinMs } from '#test/support/bounds.ts';
import {
  byOperation,
  firstRole,
  genericCases,
  homeOrg,
  isMutating,
  routeTable,
  specific,
  specificCases,
  type BadRequest,
  type Values,
} from '#test/support/bad-input-cases.ts';
import { difference, snapshot, unchanged, type Snapshot } from '#test/support/table-snapshot.ts';

// API.md "Conventions": bad input is always a 4xx problem (422 `validation-failed` with `errors[].path`, 400
// `invalid-json`, 413 for an oversized body), never a 5xx, and changes nothing. Every case below dumps the site's
// table (and its idempotency table) before and after the request and requires them identical.
//
// What the comparison leaves out, and why: only the SITE#HEARTBEAT item. The simulated site agent keeps beating
// (the site stays realistic, and machines stay allocatable so a wrongly accepted create WOULD succeed and show up);
// a beat with an unchanged roster rewrites nothing but that one item's `rosterSeenAt`, every timeout/3. The roster
// never changes in this file, so machine items are not touched by heartbeats and are compared in full, as are the
// catalog (SITE#CATALOG), instances, meta-instances, tenants and history entries.

// ---- the site and the table dump ------------------------------------------------------------------------------

const config = testConfig();
const QUIET_WITHIN_MS = afterNextSweepWithinMs(config, TEST_SWEEP_INTERVAL_MS);
let site: TestSite;
let values: Values;
const tokens = {} as Record<Role, string>;
let baseline: Snapshot;
let current: Snapshot;

async function waitForInstance(id: string, status: string) {
  return site.eventually(async () => {
    const { body } = await site.call('GET', `/v2/org/acme/nico/instance/${id}`, { token: tokens.tenant });
    return body.status === status ? body : undefined;
  });
}

beforeAll(async () => {
  site = await startTestSite({ config });
  for (const role of ['tenant', 'provider-admin', 'site-agent'] as Role[]) tokens[role] = await site.token(homeOrg[role], [role]);
  await site.eventually(async () => (await site.call('GET', '/admin/machines?allocatable=true', { token: tokens['provider-admin'] })).body.items.length === 6);
  // A Ready instance of acme (so a release or a patch that slipped through would show) and acme may target machines.
  const created = await site.call('POST', '/v2/org/acme/nico/instance', { token: tokens.tenant, body: { machineType: 'gb200', name: 'bad-input' } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  await waitForInstance(created.body.id, 'Ready');
  const granted = await site.call('PUT', '/admin/tenants/acme', {
    token: tokens['provider-admin'],
    body: { capabilities: { targetedInstanceCreation: true } },
  });
  expect(granted.status).toBe(200);
  const machinesPage = await site.call('GET', '/admin/machines?limit=1', { token: tokens['provider-admin'] });
  expect(typeof machinesPage.body.nextToken).toBe('string');
  values = {
    instanceId: created.body.id,
    machineId: created.body.machineId,
    metaInstanceId: 'mi-does-not-matter',
    otherListingToken: encodeURIComponent(machinesPage.body.nextToken),
  };
  await site.streamIdle();
  baseline = await snapshot(site);
  current = baseline;
});
afterAll(async () => site?.stop());

async function send(route: Route, request: BadRequest) {
  const path = `${request.path}${request.query !== undefined ? `?${request.query}` : ''}`;
  return site.call(route.method, path, {
    token: tokens[firstRole(route)],
    ...(request.body !== undefined ? { body: request.body } : {}),
    ...(request.headers ? { headers: request.headers } : {}),
  });
}

describe('the site is quiet without requests', () => {
  const quietly = 'a dump taken after a whole sweep and the stream reactions to it is identical, so any difference below comes from the request';
  it(quietly, { timeout: QUIET_WITHIN_MS }, async () => {
    // The dump really holds the fleet: 6 machines, the instance, the tenant, the catalog and history entries.
    expect(baseline.table.has(`INSTANCE#${values.instanceId} | #INSTANCE`)).toBe(true);
    expect(baseline.table.has(`MACHINE#${values.machineId} | #MACHINE`)).toBe(true);
    expect(baseline.table.size).toBeGreaterThan(10);
    await site.afterNextSweep();
    current = await snapshot(site);
    expect(difference(baseline.table, current.table)).toEqual(unchanged);
    expect(difference(baseline.idempotency, current.idempotency)).toEqual(unchanged);
  });

  it('every route named by a specific case exists in the table (a renamed route must not silently lose its cases)', () => {
    expect(Object.keys(specific).filter((operationId) => !byOperation.has(operationId))).toEqual([]);
  });
});

describe.each(routeTable.map((route) => [routeKey(route), route] as const))('%s', (_key, route) => {
  const cases = [...genericCases(route), ...specificCases(route)];
  if (cases.length === 0) return void it.skip('takes no input that could be bad');
  it.each(cases.map((c) => [c.name, c] as const))(`%s → 4xx problem${isMutating(route) ? ', nothing changed' : ''}`, async (_name, c) => {
    // The dump after the previous case is this case's "before" (the site is quiet, see above): one scan per case.
    const before = current;
    const response = await send(route, c.request(values));
    expectProblem(response, c.status, c.code);
    if (c.status === 413) expect(response.body.limit, 'a 413 names the limit').toBe(route.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
    if (c.code === 'validation-failed' || c.code === 'invalid-page-token') {
      const errors: Array<{ path: unknown; message: unknown }> = response.body.errors;
      expect(Array.isArray(errors) && errors.length > 0, JSON.stringify(response.body)).toBe(true);
      for (const error of errors) expect(error).toMatchObject({ path: expect.any(String), message: expect.any(String) });
      for (const expected of c.errorPaths ?? []) {
        const named = errors.some((e) => e.path === expected || String(e.path).startsWith(`${expected}.`));
        expect(named, `errors should name ${expected}: ${JSON.stringify(errors)}`).toBe(true);
      }
    }
    // A GET cannot write (and is not what this file guards): only mutating routes pay for the dump.
    if (!isMutating(route)) return;
    const after = await snapshot(site);
    current = after;
    expect(difference(before.table, after.table)).toEqual(unchanged);
    expect(difference(before.idempotency, after.idempotency)).toEqual(unchanged);
  });
});

describe('doubled slashes', () => {
  // API Gateway matches routes on the path as sent: `//openapi.json` is no route (and locally not the dashboard's `/`).
  it.each(['//openapi.json', '//', '/v2//org/acme/nico/instance', '//admin/machines'])("GET %s → the gateway's 404", async (path) => {
    const response = await site.call('GET', path, { token: tokens['provider-admin'] });
    expectGatewayAnswer(response, 404);
  });
});

describe('after all of it', () => {
  const unchangedAfterAll = 'the tables are exactly as they were before the first bad request, after a whole sweep and the stream reactions to it';
  it(unchangedAfterAll, { timeout: QUIET_WITHIN_MS }, async () => {
    await site.afterNextSweep();
    const now = await snapshot(site);
    expect(difference(baseline.table, now.table)).toEqual(unchanged);
    expect(difference(baseline.idempotency, now.idempotency)).toEqual(unchanged);
    expect((await waitForInstance(values.instanceId, 'Ready')).status).toBe('Ready');
  });
});
