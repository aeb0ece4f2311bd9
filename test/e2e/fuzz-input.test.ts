import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '#domain/core/model.ts';
import type { Route } from '#http/route.ts';
import { fuzzSettings } from '#test/support/fuzz.ts';
import { applyEdit, bodyEdits, inUrl, surplusKeys, tamperedKey, wrongValuesUpTo } from '#test/support/fuzz-arbitraries.ts';
import { routes } from '#http/routes/index.ts';
import { routePath, startTestSite, type TestSite } from '#test/support/local-site.ts';
import { difference, snapshot, unchanged } from '#test/support/table-snapshot.ts';

// Property: a request with at least one defect (a body, query, path, header or credential its route must refuse),
// built by mutating a VALID request of any route in the table for any role, is answered 4xx problem+json with a
// `code`, never a 5xx, and changes nothing (both tables dumped after every mutating request). Complements
// bad-input.test.ts (named cases per route) with generated ones; FUZZ_RUNS / FUZZ_SEED widen or replay a run.

const routeTable: readonly Route[] = routes;
const homeOrg: Record<Role, string> = { tenant: 'acme', 'provider-admin': 'provider', 'site-agent': 'site' };
const roles = Object.keys(homeOrg) as Role[];

interface Values {
  instanceId: string;
  machineId: string;
  /** Genuine page tokens of two listings: each is a foreign token to every other listing. */
  machinesToken: string;
  instancesToken: string;
}

/** A valid body per route that takes one: the starting point of every body mutation. */
const validBodies: Record<string, (v: Values) => unknown> = {
  'create-instance': () => ({ machineType: 'gb200', name: 'fuzz', labels: { team: 'ml' } }),
  'delete-instance': () => ({ machineHealthIssue: { category: 'HARDWARE', summary: 'GPU fell off the bus', details: 'slot 3' }, isRepairTenant: false }),
  'update-instance': () => ({ labels: { team: 'ml' }, onlineRepair: { enabled: false } }),
  'release-instance': (v) => ({ id: v.instanceId, issue: { category: 'OTHER', summary: 'slow' } }),
  'update-machine': () => ({ labels: { repair_status: 'InProgress', repair_details: 'reseating' } }),
  'create-meta-instance': () => ({ machineType: 'h100', minNodes: 1, placement: { sameRack: true } }),
  'register-machines': () => ({ machines: [{ id: 'fuzz-new', machineType: 'gb200', rack: 'r1', labels: { a: 'b' } }] }),
  'set-tenant-capabilities': () => ({ capabilities: { targetedInstanceCreation: true } }),
  'add-health-override': () => ({ template: 'degraded', mode: 'merge', message: 'fans' }),
  'update-machine-labels': () => ({ labels: { note: 'checked' } }),
  'reset-repair-storm': () => ({ applyHeldBack: false }),
  'post-heartbeats': (v) => ({ machines: [{ id: v.machineId }] }),
  'report-cleanup': () => ({ ok: true, message: 'wiped' }),
  'declare-maintenance': (v) => ({
    kind: 'planned',
    category: 'firmware',
    reason: 'fuzz',
    impact: 'a reboot',
    scope: { machineIds: [v.machineId], racks: ['r1'] },
    handBackBy: '2030-01-01T00:00:00Z',
    windowMinutes: 60,
    rollout: { maxInFlight: 1, haltAfterFailures: 1 },
  }),
  'decide-maintenance-deferral': () => ({ decision: 'accept' }),
  'hand-back-maintenance': (v) => ({ instanceIds: [v.instanceId] }),
  'request-maintenance-deferral': () => ({ until: '2030-02-01T00:00:00Z', reason: 'fuzz' }),
  'report-maintenance': () => ({ maintenanceId: 'mnt-1', ok: true, message: 'done' }),
  'report-validation': () => ({ validationId: 'v-fuzz', passed: false, results: [{ test: 'dcgm-diag', passed: false, message: 'Xid 79' }] }),
  'retire-machine': () => ({ reason: 'fuzzed' }),
  'power-instance': () => ({ action: 'cycle' }),
  'replace-meta-instance-member': (v) => ({ instanceId: v.instanceId, issue: { category: 'HARDWARE', summary: 'NVLink errors' } }),
  'create-reservation': () => ({ org: 'acme', machineType: 'h100', count: 40, name: 'fuzz' }),
};

const queryShape = (route: Route): Record<string, unknown> => (route.query as { shape?: Record<string, unknown> } | undefined)?.shape ?? {};
const paramNames = (route: Route) => [...route.path.matchAll(/\{([A-Za-z0-9_]+)\+?\}/g)].map((m) => m[1]!);
const firstRole = (route: Route): Role => (route.roles === 'public' ? 'tenant' : route.roles[0]!);
const b64 = (text: string) => Buffer.from(text).toString('base64url');

// ---- a request and its defects -------------------------------------------------------------------------------

interface FuzzRequest {
  /** The route's operationId: counterexamples print it instead of the route's schemas. */
  operation: string;
  role: Role;
  org: string;
  token: 'valid' | 'none' | 'garbage' | 'wrong-role';
  params: Record<string, string>;
  query: Array<[string, string]>;
  /** Raw text (sent as is) or a value sent as JSON; undefined sends no body. */
  body: { raw: string } | { json: unknown } | undefined;
  headers: Record<string, string>;
}

const byOperation = new Map(routeTable.map((route) => [route.operationId, route]));
const routeOf = (request: FuzzRequest) => byOperation.get(request.operation)!;
const describeRequest = (r: FuzzRequest) => `${routeOf(r).method} ${routeOf(r).path} as ${r.role} (${r.token} token, org ${r.org})`;

type Defect = (request: FuzzRequest) => fc.Arbitrary<FuzzRequest>;

/** What every route refuses: each defect alone makes the request invalid, whatever the others do. */
function defectsOf(route: Route, values: Values): Defect[] {
  const shape = queryShape(route);
  const defects: Defect[] = [
    // Every route has a strict query schema (emptyQuery at least).
    (r) =>
      fc
        .tuple(
          surplusKeys.filter((k) => !(k in shape)),
          inUrl,
        )
        .map(([k, v]) => ({ ...r, query: [...r.query, [k, v] as [string, string]] })),
  ];
  if ('limit' in shape) {
    const badLimit = fc.oneof(
      fc.constantFrom('0x10', '1e2', ' 5', '+5', '5 ', '-1', '1.5', '0', '501', '', '１２', '12345678901234567890', 'Infinity'),
      fc.string().filter((s) => !/^[0-9]{1,9}$/.test(s) || Number(s) < 1 || Number(s) > 500),
    );
    defects.push((r) => badLimit.map((limit) => ({ ...r, query: [...r.query, ['limit', limit] as [string, string]] })));
  }
  if ('since' in shape) {
    const refused = fc
      .oneof(inUrl, fc.constantFrom('-1', '01', '1e3', ' 1', '1.0', '9'.repeat(16), '2030-13-01T00:00:00Z'))
      .filter((since) => !route.query!.safeParse({ since }).success);
    defects.push((r) => refused.map((since) => ({ ...r, query: [...r.query, ['since', since] as [string, string]] })));
  }
  if ('nextToken' in shape) {
    const own = { 'list-machines': values.machinesToken, 'list-instances': values.instancesToken }[route.operationId];
    const foreign = own === values.machinesToken ? values.instancesToken : values.machinesToken;
    const genuine = own ?? values.machinesToken;
    const forged = fc.oneof(
      fc.constant(foreign),
      tamperedKey(genuine),
      fc.nat({ max: 40 }).map((cut) => genuine.slice(0, Math.max(0, genuine.length - 1 - cut))),
      fc.jsonValue().map((v) => b64(JSON.stringify(v))),
      fc
        .dictionary(fc.constantFrom('pk', 'sk', 'kind', 'kindSk', 'orgPk', 'orgSk', 'repairPk', 'repairSince'), wrongValuesUpTo(2_000))
        .map((key) => b64(JSON.stringify({ listing: 'x', key }))),
      fc.constantFrom('{"pk":12345678901234567890}', '{"pk":1e400}', '{"pk":{"S":"x"}}', '[]', 'null').map(b64),
      fc.nat({ max: 3000 }).map((n) => 'A'.repeat(n)),
      inUrl,
    );
    defects.push((r) => forged.map((token) => ({ ...r, query: [...r.query, ['nextToken', token] as [string, string]] })));
  }
  for (const name of paramNames(route)) {
    if (!route.params) break;
    // Only values the route's own schema refuses: anything else is a legitimate (if unknown) resource.
    const invalid = inUrl.filter((value) => value !== '' && !route.params!.safeParse({ ...defaultParams(route, values), [name]: value }).success);
    if (name === 'org' && route.path.startsWith('/v2/org/')) continue; // another org is the `org` defect below
    defects.push((r) => invalid.map((value) => ({ ...r, params: { ...r.params, [name]: value } })));
  }
  if (route.body) {
    const example = validBodies[route.operationId]!(values);
    defects.push((r) =>
      fc.oneof(
        fc
          .array(bodyEdits(example), { minLength: 1, maxLength: 3 })
          .map((edits) => edits.reduce(applyEdit, example))
          .filter((body) => !route.body!.safeParse(body).success)
          .map((json) => ({ ...r, body: { json } })),
        fc
          .string()
          .filter((text) => text.trim() !== '' && !parsesAsJson(text))
          .map((raw) => ({ ...r, body: { raw } })),
      ),
    );
  }
  if (route.method !== 'GET') {
    const badKey = fc.oneof(
      fc.constantFrom('', '   '),
      fc.integer({ min: 256, max: 4000 }).map((n) => 'k'.repeat(n)),
    );
    defects.push((r) => badKey.map((key) => ({ ...r, headers: { ...r.headers, 'idempotency-key': key } })));
  }
  // A public route has no authorizer, so API Gateway ignores whatever token comes with it: no defect there.
  if (route.roles !== 'public') {
    defects.push((r) => fc.constantFrom('none' as const, 'garbage' as const, 'wrong-role' as const).map((token) => ({ ...r, token })));
    if (route.path.startsWith('/v2/org/{org}')) defects.push((r) => fc.constant({ ...r, org: 'globex' }));
  }
  return defects;
}

const parsesAsJson = (text: string) => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

const defaultParams = (route: Route, values: Values): Record<string, string> => {
  const path = routePath(route, { org: homeOrg[firstRole(route)], instanceId: values.instanceId, machineId: values.machineId, metaInstanceId: 'mi-fuzz' });
  const names = paramNames(route);
  const pattern = new RegExp(`^${route.path.replace(/\{[A-Za-z0-9_]+\+?\}/g, '([^/]*)')}$`);
  const match = pattern.exec(path)!;
  return Object.fromEntries(names.map((name, i) => [name, decodeURIComponent(match[i + 1]!)]));
};

function requests(values: Values): fc.Arbitrary<FuzzRequest> {
  return fc
    .constantFrom(...routeTable)
    .chain((route) =>
      fc.record({
        route: fc.constant(route),
        role: route.roles === 'public' ? fc.constantFrom(...roles) : fc.constantFrom(...route.roles),
        defects: fc.shuffledSubarray(defectsOf(route, values), { minLength: 1, maxLength: Math.min(3, defectsOf(route, values).length) }),
      }),
    )
    .chain(({ route, role, defects }) => {
      const valid: FuzzRequest = {
        operation: route.operationId,
        role,
        org: homeOrg[role],
        token: 'valid',
        params: defaultParams(route, values),
        query: [],
        body: route.body ? { json: validBodies[route.operationId]!(values) } : undefined,
        headers: {},
      };
      return defects.reduce<fc.Arbitrary<FuzzRequest>>((request, defect) => request.chain(defect), fc.constant(valid));
    });
}

// ---- the site ------------------------------------------------------------------------------------------------

let site: TestSite;
let values: Values;
const tokens = {} as Record<Role, string>;

beforeAll(async () => {
  site = await startTestSite();
  for (const role of roles) tokens[role] = await site.token(homeOrg[role], [role]);
  await site.eventually(async () => (await site.call('GET', '/admin/machines?allocatable=true', { token: tokens['provider-admin'] })).body.items.length === 6);
  const created = await site.call('POST', '/v2/org/acme/nico/instance', { token: tokens.tenant, body: { machineType: 'gb200', name: 'fuzz-target' } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const second = await site.call('POST', '/v2/org/acme/nico/instance', { token: tokens.tenant, body: { machineType: 'h100', name: 'fuzz-second' } });
  const machines = await site.call('GET', '/admin/machines?limit=1', { token: tokens['provider-admin'] });
  const instances = await site.call('GET', '/v2/org/acme/nico/instance?limit=1', { token: tokens.tenant });
  values = { instanceId: created.body.id, machineId: created.body.machineId, machinesToken: machines.body.nextToken, instancesToken: instances.body.nextToken };
  expect(values.machinesToken && values.instancesToken).toBeTruthy();
  // Both instances settled, and everything the site does about them done (the stream, and a sweep after it): a run's
  // "changes nothing" then sees only what its request did.
  for (const id of [values.instanceId, second.body.id]) {
    await site.eventually(async () => (await site.call('GET', `/v2/org/acme/nico/instance/${id}`, { token: tokens.tenant })).body.status === 'Ready');
  }
  await site.streamIdle();
  await site.afterNextSweep();
}, 60_000);
afterAll(async () => site?.stop());

async function send(request: FuzzRequest) {
  const route = routeOf(request);
  const path = route.path.replace(/\{([A-Za-z0-9_]+)\+?\}/g, (_m, name: string) =>
    encodeURIComponent(name === 'org' && route.path.startsWith('/v2/org/{org}') ? request.org : request.params[name]!),
  );
  const query = request.query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
  const otherRole = roles.find((role) => route.roles !== 'public' && !route.roles.includes(role))!;
  const token = { valid: tokens[request.role], garbage: 'not.a.jwt', 'wrong-role': tokens[otherRole], none: undefined }[request.token];
  const body = request.body === undefined ? undefined : 'raw' in request.body ? request.body.raw : JSON.stringify(request.body.json);
  return site.call(route.method, `${path}${query ? `?${query}` : ''}`, {
    ...(token ? { token } : {}),
    ...(body !== undefined ? { body } : {}),
    headers: request.headers,
  });
}

describe('generated bad requests', () => {
  it('every route that takes a body has a valid example, and it is valid', () => {
    const withBody = routeTable.filter((route) => route.body);
    expect(withBody.filter((route) => !validBodies[route.operationId]).map((route) => route.operationId)).toEqual([]);
    for (const route of withBody) expect(route.body!.safeParse(validBodies[route.operationId]!(values)).success, route.operationId).toBe(true);
  });

  it("are answered 4xx (problem+json with a code, or the gateway's own answer), never 5xx, and change nothing", { timeout: 120_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(requests(values), async (request) => {
        // Taken per run: a failed run (and shrinking replays) must not leave its change in the next run's "before".
        const before = routeOf(request).method === 'GET' ? undefined : await snapshot(site);
        const response = await send(request);
        const context = `${describeRequest(request)} → ${response.status} ${JSON.stringify(response.body)?.slice(0, 500)}`;
        expect(response.status, context).toBeGreaterThanOrEqual(400);
        expect(response.status, context).toBeLessThan(500);
        // API Gateway answers some refusals itself (no route: 404; no or a refused token: 401) with its own
        // `{ message }` body (docs/api.md "Errors from the gateway"); everything else is Fleetward's problem+json.
        const fromGateway = response.headers.get('content-type') === 'application/json' && (response.status === 401 || response.status === 404);
        if (fromGateway) {
          expect(response.body, context).toEqual({ message: response.status === 401 ? 'Unauthorized' : 'Not Found' });
        } else {
          expect(response.headers.get('content-type'), context).toMatch(/^application\/problem\+json/);
          expect(response.body, context).toMatchObject({ status: response.status, code: expect.stringMatching(/^[a-z][a-z-]*$/) });
        }
        if (!before) return;
        const after = await snapshot(site);
        expect(difference(before.table, after.table), context).toEqual(unchanged);
        expect(difference(before.idempotency, after.idempotency), context).toEqual(unchanged);
      }),
      fuzzSettings('fuzz-input', 150),
    );
  });
});
