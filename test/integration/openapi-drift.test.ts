import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { openApiDocument } from '#http/openapi.ts';
import type { Route } from '#http/route.ts';
import { routes as routeTable } from '#http/routes/index.ts';
import { expectProblem, routeKey, routePath, startTestSite, type TestSite } from '#test/support/local-site.ts';

/*
 * Does the document say what the handlers enforce?
 *
 * For every route with a body we take a valid sample and derive many variants of it: unknown keys (and keys no
 * record allows), each key removed, each value swapped for every JSON type, emptied and made far too long. For
 * each variant we ask two judges: the route's zod schema (what api-handler.ts validates with) and the document's
 * request schema, read by the small JSON Schema evaluator below. They must agree. Every variant zod refuses is
 * also sent over HTTP to the running site and must be a 422 `validation-failed`.
 *
 * This fails when the document drifts from the handlers: a constraint the generator drops (it did drop record
 * key patterns and the issue category enum until openapi.ts restored them), a stale or hand-edited document, a
 * schema keyword nobody taught the evaluator (it refuses unknown keywords rather than ignore them), or a route
 * whose served document differs from the table. One thing JSON Schema cannot say is left out on purpose: zod
 * refinements (`custom` issues: "exactly one of machineType or machineId", unique ids, at most 64 labels). A
 * variant that only a refinement rejects may pass the document; any other disagreement fails the test.
 *
 * The answers are checked the same way: what the routes answer on the way through an instance's and a
 * meta-instance's life must be a documented success status, with a body the documented schema accepts.
 */

// ---- a JSON Schema (2020-12 subset) evaluator for what the generator emits -----------------------------------

type Schema = Record<string, any> | boolean;
const annotations = new Set(['description', 'default', 'title', 'examples', 'example', 'deprecated', 'readOnly', 'writeOnly', '$comment']);
const assertions = new Set([
  'type',
  'enum',
  'const',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'items',
  'minItems',
  'maxItems',
  'properties',
  'required',
  'additionalProperties',
  'propertyNames',
  'minProperties',
  'maxProperties',
  'anyOf',
  'oneOf',
  'allOf',
  'not',
  '$ref',
]);

const typeOf = (value: unknown): string =>
  value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value === 'number' ? (Number.isInteger(value) ? 'integer' : 'number') : typeof value;

function valid(schema: Schema, value: unknown, root: any): boolean {
  if (typeof schema === 'boolean') return schema;
  for (const keyword of Object.keys(schema)) {
    if (!annotations.has(keyword) && !assertions.has(keyword))
      throw new Error(`the evaluator does not know "${keyword}": teach it before trusting the drift test`);
  }
  if (schema.$ref !== undefined) {
    const name = /^#\/components\/schemas\/(.+)$/.exec(schema.$ref)?.[1];
    if (!name) throw new Error(`unsupported $ref ${schema.$ref}`);
    if (!valid(root.components.schemas[name], value, root)) return false;
  }
  const actual = typeOf(value);
  if (schema.type !== undefined) {
    const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => t === actual || (t === 'number' && actual === 'integer'))) return false;
  }
  if (schema.enum && !schema.enum.some((e: unknown) => JSON.stringify(e) === JSON.stringify(value))) return false;
  if ('const' in schema && JSON.stringify(schema.const) !== JSON.stringify(value)) return false;
  if (typeof value === 'string') {
    if (schema.minLength !== undefined && value.length < schema.minLength) return false;
    if (schema.maxLength !== undefined && value.length > schema.maxLength) return false;
    if (schema.pattern !== undefined && !new RegExp(schema.pattern).test(value)) return false;
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) return false;
    if (schema.maximum !== undefined && value > schema.maximum) return false;
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) return false;
    if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum) return false;
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) return false;
    if (schema.maxItems !== undefined && value.length > schema.maxItems) return false;
    if (schema.items !== undefined && !value.every((item) => valid(schema.items, item, root))) return false;
  }
  if (actual === 'object') {
    const object = value as Record<string, unknown>;
    const keys = Object.keys(object);
    if (schema.required && !schema.required.every((k: string) => k in object)) return false;
    if (schema.minProperties !== undefined && keys.length < schema.minProperties) return false;
    if (schema.maxProperties !== undefined && keys.length > schema.maxProperties) return false;
    if (schema.propertyNames !== undefined && !keys.every((k) => valid(schema.propertyNames, k, root))) return false;
    for (const key of keys) {
      const declared = schema.properties?.[key];
      if (declared !== undefined) {
        if (!valid(declared, object[key], root)) return false;
      } else if (schema.additionalProperties !== undefined && !valid(schema.additionalProperties, object[key], root)) {
        return false;
      }
    }
  }
  if (schema.allOf && !schema.allOf.every((s: Schema) => valid(s, value, root))) return false;
  if (schema.anyOf && !schema.anyOf.some((s: Schema) => valid(s, value, root))) return false;
  if (schema.oneOf && schema.oneOf.filter((s: Schema) => valid(s, value, root)).length !== 1) return false;
  if (schema.not !== undefined && valid(schema.not, value, root)) return false;
  return true;
}

// ---- valid samples and their variants ----------------------------------------------------------------------

const issue = { category: 'HARDWARE', summary: 'ECC errors', details: 'DIMM 2' };
/** One valid body per route that takes one. A new route whose schema refuses `{}` needs a sample here. */
const samples: Record<string, unknown> = {
  'create-instance': { machineType: 'gb200', name: 'job-1', labels: { team: 'ml' } },
  'delete-instance': { machineHealthIssue: issue, isRepairTenant: true },
  'update-instance': { labels: { team: 'ml', old: null }, onlineRepair: { enabled: true, issue } },
  'release-instance': { id: 'i-1', issue },
  'update-machine': { labels: { repair_status: 'Completed', repair_eta: null } },
  'update-machine-labels': { labels: { repair_status: 'Completed', repair_eta: null } },
  'add-health-override': { template: 'request-repair', message: 'manual repair', mode: 'merge' },
  'create-meta-instance': {
    machineType: 'gb200',
    minNodes: 2,
    machineIds: ['gb200-r1-01'],
    placement: { sameRack: true, sameNvlinkDomain: false },
    labels: { team: 'ml' },
  },
  'register-machines': { machines: [{ id: 'gb200-r9-01', machineType: 'gb200', rack: 'rack-9', nvlinkDomain: 'gb200-nvl9', labels: { pool: 'a' } }] },
  'set-tenant-capabilities': { capabilities: { targetedInstanceCreation: true }, quotas: { gb200: 10 } },
  'post-heartbeats': { machines: [{ id: 'gb200-r1-01' }] },
  'report-cleanup': { ok: true, message: 'sanitized' },
  'report-validation': { validationId: 'v-1', passed: false, results: [{ test: 'dcgm-diag', passed: false, message: 'Xid 79' }] },
  'retire-machine': { reason: 'end of life' },
  'power-instance': { action: 'cycle' },
  'replace-meta-instance-member': { instanceId: 'i-1', issue },
  'reset-repair-storm': { applyHeldBack: true },
  'declare-maintenance': {
    kind: 'planned',
    category: 'firmware',
    reason: 'BMC firmware 2.4',
    impact: 'a reboot',
    scope: { machineIds: ['gb200-r1-01'], racks: ['rack-1'], nvlinkDomains: ['nvl-1'] },
    handBackBy: '2026-12-14T09:00:00.000Z',
    windowMinutes: 240,
    rollout: { maxInFlight: 4, haltAfterFailures: 2 },
  },
  'decide-maintenance-deferral': { decision: 'accept' },
  'hand-back-maintenance': { instanceIds: ['i-1'] },
  'request-maintenance-deferral': { until: '2026-12-30T09:00:00.000Z', reason: 'a training run ends on the 30th' },
  'report-maintenance': { maintenanceId: 'mnt-1', ok: false, message: 'flash failed' },
  'create-reservation': { org: 'acme', machineType: 'gb200', count: 2, name: 'training' },
};

interface Variant {
  what: string;
  body: unknown;
}

const swaps: unknown[] = [42, 1.5, 'x', true, null, [], {}];

/** Variants of `value`, each one change away from it, described by the path they change. */
function variants(value: unknown, at = 'body'): Variant[] {
  const out: Variant[] = swaps.map((swap) => ({ what: `${at} = ${JSON.stringify(swap)}`, body: swap }));
  if (typeof value === 'string') {
    out.push({ what: `${at} = ""`, body: '' }, { what: `${at} = 9000 chars`, body: 'a'.repeat(9000) });
  }
  if (typeof value === 'number') out.push({ what: `${at} = -1`, body: -1 }, { what: `${at} = 1e6`, body: 1e6 });
  if (Array.isArray(value)) {
    out.push({ what: `${at} = 1000 copies`, body: Array.from({ length: 1001 }, () => value[0]) });
    value.forEach((item, i) => {
      for (const v of variants(item, `${at}[${i}]`)) out.push({ what: v.what, body: value.map((x, j) => (j === i ? v.body : x)) });
    });
  } else if (typeof value === 'object' && value !== null) {
    const object = value as Record<string, unknown>;
    out.push({ what: `${at} + unknown key`, body: { ...object, __unknown: 1 } }, { what: `${at} + key "bad key!"`, body: { ...object, 'bad key!': 'x' } });
    for (const key of Object.keys(object)) {
      const { [key]: _removed, ...rest } = object;
      out.push({ what: `${at} - ${key}`, body: rest });
      for (const v of variants(object[key], `${at}.${key}`)) out.push({ what: v.what, body: { ...object, [key]: v.body } });
    }
  }
  return out;
}

/** Whether zod refuses only through refinements, which JSON Schema cannot express. */
const onlyRefinements = (error: z.ZodError) => error.issues.every((i) => i.code === 'custom');

// ---- the tests -----------------------------------------------------------------------------------------------

describe('the OpenAPI document matches what the handlers enforce', () => {
  let site: TestSite;
  let routes: readonly Route[];
  let doc: any;
  const tokens = new Map<string, string>();
  const tokenFor = async (route: Route) => {
    const role = route.roles === 'public' ? undefined : route.roles[0]!;
    if (!role) return undefined;
    if (!tokens.has(role)) tokens.set(role, await site.token('acme', [role]));
    return tokens.get(role);
  };

  beforeAll(async () => {
    site = await startTestSite();
    routes = routeTable;
    const served = await site.call('GET', '/openapi.json');
    expect(served.status).toBe(200);
    doc = served.body;
  });
  afterAll(async () => site?.stop());

  it('is served at GET /openapi.json without a token, made from the table the site serves', async () => {
    const served = await site.call('GET', '/openapi.json');
    expect(served.headers.get('content-type')).toMatch(/^application\/json/);
    expect(served.body).toEqual(JSON.parse(JSON.stringify(openApiDocument(routes))));
    const documented = Object.entries(doc.paths as Record<string, object>).flatMap(([p, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${p}`));
    expect(documented.sort()).toEqual(routes.map(routeKey).sort());
    // With a token it is the same document (public routes ignore who asks).
    expect((await site.call('GET', '/openapi.json', { token: await site.token('acme', ['tenant']) })).body).toEqual(served.body);
  });

  it('has a valid sample for every route with a body', () => {
    for (const route of routes.filter((r) => r.body)) {
      const sample = samples[route.operationId] ?? {};
      const parsed = route.body!.safeParse(sample);
      expect(parsed.success, `${route.operationId}: add a valid sample body to this test (${JSON.stringify(parsed.error?.issues)})`).toBe(true);
      const schema = doc.paths[route.path][route.method.toLowerCase()].requestBody.content['application/json'].schema;
      expect(valid(schema, sample, doc), `${route.operationId}: the document refuses a body the handler accepts`).toBe(true);
    }
  });

  it('agrees with zod on every variant, and the handler answers 422 to every variant zod refuses', async () => {
    let compared = 0;
    let sent = 0;
    let refinementsOnly = 0;
    for (const route of routes.filter((r) => r.body)) {
      const schema = doc.paths[route.path][route.method.toLowerCase()].requestBody.content['application/json'].schema;
      const refused: Variant[] = [];
      for (const variant of variants(samples[route.operationId] ?? {})) {
        const byZod = route.body!.safeParse(variant.body);
        const byDoc = valid(schema, variant.body, doc);
        compared++;
        if (!byZod.success && byDoc && onlyRefinements(byZod.error)) {
          refinementsOnly++;
          refused.push(variant);
          continue;
        }
        expect(
          byDoc,
          `${route.operationId}: ${variant.what}: zod says ${byZod.success ? 'valid' : `invalid (${byZod.error!.issues.map((i) => i.message).join('; ')})`}`,
        ).toBe(byZod.success);
        if (!byZod.success) refused.push(variant);
      }
      const token = await tokenFor(route);
      const url = routePath(route, { org: 'acme', instanceId: 'i-unknown', machineId: 'gb200-r1-01', metaInstanceId: 'mi-unknown', fallback: 'x' });
      for (let i = 0; i < refused.length; i += 16) {
        await Promise.all(
          refused.slice(i, i + 16).map(async (variant) => {
            const response = await site.call(route.method, url, { ...(token ? { token } : {}), body: JSON.stringify(variant.body) });
            try {
              expectProblem(response, 422, 'validation-failed');
            } catch (error) {
              throw new Error(`${route.operationId}: ${variant.what}: ${(error as Error).message}`);
            }
            sent++;
          }),
        );
      }
    }
    // Enough variants to mean something, and refinements stay the exception.
    expect(compared).toBeGreaterThan(500);
    expect(sent).toBeGreaterThan(300);
    expect(refinementsOnly).toBeLessThan(compared / 20);
  });

  it('lists the success statuses the routes answer with, and their bodies fit the documented schemas', async () => {
    const admin = await site.token('provider', ['provider-admin']);
    const tenant = await site.token('acme', ['tenant']);
    const documented = async (operationId: string, path: string, token: string, body?: unknown) => {
      const route = routes.find((r) => r.operationId === operationId)!;
      const response = await site.call(route.method, path, { token, ...(body !== undefined ? { body } : {}) });
      expect(response.status, `${operationId}: ${JSON.stringify(response.body)}`).toBeLessThan(300);
      const documentedAnswers = doc.paths[route.path][route.method.toLowerCase()].responses;
      expect(Object.keys(documentedAnswers), `${operationId} answered ${response.status}`).toContain(String(response.status));
      const content = documentedAnswers[String(response.status)].content;
      if (content === undefined) expect(response.body, `${operationId} ${response.status} has no documented body`).toBeUndefined();
      else
        expect(valid(content['application/json'].schema, response.body, doc), `${operationId} ${response.status}: ${JSON.stringify(response.body)}`).toBe(true);
      return response.body;
    };
    const ready = async (id: string) =>
      site.eventually(async () => (await site.call('GET', `/v2/org/acme/nico/instance/${id}`, { token: tenant })).body.status === 'Ready');
    await site.eventually(async () => (await site.call('GET', '/admin/machines?allocatable=true', { token: admin })).body.items.length === 6);

    const first = await documented('create-instance', '/v2/org/acme/nico/instance', tenant, { machineType: 'gb200' });
    await ready(first.id);
    await documented('get-instance', `/v2/org/acme/nico/instance/${first.id}`, tenant);
    await documented('delete-instance', `/v2/org/acme/nico/instance/${first.id}`, tenant); // 202
    await documented('delete-instance', `/v2/org/acme/nico/instance/${first.id}`, tenant); // 200: already released
    const second = await documented('create-instance', '/v2/org/acme/nico/instance', tenant, { machineType: 'gb200' });
    await ready(second.id);
    await documented('release-instance', '/api/v1/instances/release', tenant, { id: second.id });
    await documented('add-health-override', `/admin/machines/${first.machineId}/health-overrides`, admin, { template: 'degraded' });
    await documented('remove-health-override', `/admin/machines/${first.machineId}/health-overrides/degraded`, admin);
    await documented('set-tenant-capabilities', '/admin/tenants/acme', admin, { capabilities: { targetedInstanceCreation: false } });
    await documented('show-tenant', '/admin/tenants/acme', admin);
    const meta = await documented('create-meta-instance', '/v2/org/acme/nico/meta-instance', tenant, { machineType: 'h100' });
    await documented('delete-meta-instance', `/v2/org/acme/nico/meta-instance/${meta.id}`, tenant);
  });

  it('documents the canonical issue categories; the handler also takes them in any letter case', async () => {
    const route = routes.find((r) => r.operationId === 'delete-instance')!;
    const schema = doc.paths[route.path].delete.requestBody.content['application/json'].schema;
    expect(schema.properties.machineHealthIssue.properties.category.enum).toEqual(['HARDWARE', 'NETWORK', 'PERFORMANCE', 'OTHER']);
    // One-way on purpose: the document is the stricter of the two, so a client that follows it is always accepted.
    const lower = { machineHealthIssue: { category: 'hardware', summary: 's' } };
    expect(route.body!.safeParse(lower).success).toBe(true);
    expect(valid(schema, lower, doc)).toBe(false);
  });
});
