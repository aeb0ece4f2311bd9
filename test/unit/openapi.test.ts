import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openApiDocument } from '#http/openapi.ts';
import { defineRoute, type Responses, type Route } from '#http/route.ts';
import { routes } from '#http/routes/index.ts';
import { routeKey } from '#test/support/local-site.ts';

// The document against the route table it is made from: every route, its operationId, security, parameters,
// body, response and problem answers. (test/integration/openapi-drift.test.ts checks the schemas against the handlers.)

const doc = openApiDocument(routes) as any;
const operationOf = (route: Pick<Route, 'method' | 'path'>) => doc.paths?.[route.path]?.[route.method.toLowerCase()];
const mutating = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const codesAt = (op: any, status: number): string[] => op.responses[String(status)]?.['x-problem-codes'] ?? [];

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1 with a bearer JWT scheme and the Problem schema', () => {
    expect(doc.openapi).toBe('3.1.0');
    // Relative to where it is served, so right for the local runner and every deployed stack alike.
    expect(doc.servers.map((server: { url: string }) => server.url)).toEqual(['/']);
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    expect(doc.components.schemas.Problem).toMatchObject({
      type: 'object',
      required: expect.arrayContaining(['type', 'title', 'status', 'detail', 'code']),
    });
    expect(doc.components.schemas.Problem.properties.errors.type).toBe('array');
  });

  it('has exactly the routes the router serves (method and path), with their operationId and summary', () => {
    const documented = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(documented.sort()).toEqual(routes.map(routeKey).sort());
    for (const route of routes) {
      const op = operationOf(route);
      expect(op.operationId, routeKey(route)).toBe(route.operationId);
      expect(op.summary, routeKey(route)).toBe(route.summary);
    }
    // The seed docs' restish call and the routes API.md lists are there under their names.
    expect(operationOf({ method: 'DELETE', path: '/v2/org/{org}/nico/instance/{id}' }).operationId).toBe('delete-instance');
    expect(operationOf({ method: 'GET', path: '/openapi.json' }).operationId).toBe('get-openapi');
  });

  it('has unique kebab-case operationIds', () => {
    const ids = routes.map((r) => r.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[a-z][a-z0-9]*(-[a-z0-9]+)*$/);
  });

  it('asks for the bearer token on every route but the public ones', () => {
    for (const route of routes) {
      const op = operationOf(route);
      if (route.roles === 'public') {
        expect(op.security, routeKey(route)).toEqual([]);
        expect(op.responses['401'], routeKey(route)).toBeUndefined();
      } else {
        expect(op.security, routeKey(route)).toEqual([{ bearerAuth: [] }]);
        expect(op['x-fleetward-roles'], routeKey(route)).toEqual(route.roles);
      }
    }
  });

  it('lists path parameters in path order (restish takes them positionally), and the query parameters the schema knows', () => {
    for (const route of routes) {
      const params = (operationOf(route).parameters ?? []) as Array<{ in: string; name: string; required: boolean }>;
      const inPath = [...route.path.matchAll(/\{([^}+]+)\+?\}/g)].map((m) => m[1]);
      expect(
        params.filter((p) => p.in === 'path').map((p) => p.name),
        routeKey(route),
      ).toEqual(inPath);
      expect(params.filter((p) => p.in === 'path').every((p) => p.required)).toBe(true);
      const shape = (route.query as z.ZodObject | undefined)?.shape ?? {};
      expect(
        params
          .filter((p) => p.in === 'query')
          .map((p) => p.name)
          .sort(),
        routeKey(route),
      ).toEqual(Object.keys(shape).sort());
    }
  });

  it('takes Idempotency-Key on mutating routes', () => {
    for (const route of routes) {
      const header = (operationOf(route).parameters ?? []).find((p: any) => p.in === 'header' && p.name === 'Idempotency-Key');
      if (mutating.has(route.method) && route.roles !== 'public') {
        expect(header, routeKey(route)).toMatchObject({ required: false, schema: { type: 'string', minLength: 1, maxLength: 255 } });
      } else {
        expect(header, routeKey(route)).toBeUndefined();
      }
    }
  });

  it('has a JSON request body exactly where the route takes one, required where the route requires it', () => {
    for (const route of routes) {
      const body = operationOf(route).requestBody;
      if (!route.body) {
        expect(body, routeKey(route)).toBeUndefined();
        continue;
      }
      expect(body.required, routeKey(route)).toBe(route.bodyRequired ?? false);
      expect(body.content['application/json'].schema, routeKey(route)).toBeDefined();
    }
  });

  it("documents exactly the route's success statuses, each with its body schema (none for 204)", () => {
    for (const route of routes) {
      const declared: Responses = route.responses;
      expect(Object.keys(declared).length, `${routeKey(route)} declares no success answer`).toBeGreaterThan(0);
      const op = operationOf(route);
      const success = Object.entries(op.responses).filter(([status]) => status.startsWith('2')) as Array<[string, any]>;
      expect(success.map(([status]) => status).sort(), routeKey(route)).toEqual(Object.keys(declared).sort());
      for (const [status, response] of success) {
        if (declared[Number(status)] === null) expect(response.content, `${routeKey(route)} ${status}`).toBeUndefined();
        else expect(response.content['application/json'].schema, `${routeKey(route)} ${status}`).toEqual(expect.any(Object));
      }
    }
    expect(operationOf({ method: 'DELETE', path: '/admin/machines/{id}/health-overrides/{source}' }).responses['204'].content).toBeUndefined();
    expect(operationOf({ method: 'POST', path: '/v2/org/{org}/nico/instance' }).responses['201'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/Instance',
    });
    expect(Object.keys(operationOf({ method: 'DELETE', path: '/v2/org/{org}/nico/instance/{id}' }).responses)).toEqual(expect.arrayContaining(['200', '202']));
  });

  it('names the shared objects as components and refers to them', () => {
    for (const name of ['Instance', 'Machine', 'MetaInstance', 'HealthOverride', 'HistoryEntry', 'Problem']) {
      expect(doc.components.schemas[name], name).toMatchObject({ type: 'object', properties: expect.any(Object) });
    }
    const machine = operationOf({ method: 'GET', path: '/admin/machines/{id}' }).responses['200'].content['application/json'].schema;
    expect(machine).toEqual({ $ref: '#/components/schemas/Machine' });
    const list = operationOf({ method: 'GET', path: '/v2/org/{org}/nico/instance' }).responses['200'].content['application/json'].schema;
    expect(list).toMatchObject({ properties: { items: { type: 'array', items: { $ref: '#/components/schemas/Instance' } } }, required: ['items'] });
    // Internal record fields are not part of the contract.
    expect(doc.components.schemas.Instance.properties).not.toHaveProperty('creation');
    expect(doc.components.schemas.Machine.properties).not.toHaveProperty('heartbeatLive');
  });

  it("answers every route's errors as problem documents: the common ones, the handler's, and the route's own", () => {
    for (const route of routes) {
      const op = operationOf(route);
      const expected: Array<[number, string]> = [[422, 'validation-failed'], ...(route.errors ?? [])];
      if (route.roles !== 'public') expected.push([401, 'unauthenticated'], [403, 'forbidden'], [404, 'not-found']);
      if (route.body) expected.push([400, 'invalid-json']);
      if (mutating.has(route.method) && route.roles !== 'public') {
        expected.push([422, 'idempotency-key-reused'], [409, 'idempotency-in-progress']);
      }
      for (const [status, code] of expected) {
        expect(codesAt(op, status), `${routeKey(route)} ${status}`).toContain(code);
        expect(op.responses[String(status)].description).toContain(`\`${code}\``);
      }
      for (const [status, response] of Object.entries(op.responses) as Array<[string, any]>) {
        if (Number(status) < 400) continue;
        expect(response.content, `${routeKey(route)} ${status}`).toEqual({ 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } });
      }
    }
  });

  it('is made from the table: a route added to it appears with its schemas', () => {
    const extra = defineRoute({
      operationId: 'frobnicate-machine',
      method: 'POST',
      path: '/admin/machines/{id}/frobnicate',
      roles: ['provider-admin'],
      summary: 'Frobnicate',
      params: z.strictObject({ id: z.string() }),
      body: z.strictObject({ level: z.enum(['low', 'high']) }),
      bodyRequired: true,
      responses: { 200: z.object({ frobnicated: z.boolean() }) },
      errors: [[409, 'already-frobnicated']],
      handle: async () => ({ status: 200, body: { frobnicated: true } }),
    });
    const op = (openApiDocument([...routes, extra]) as any).paths['/admin/machines/{id}/frobnicate'].post;
    expect(op.operationId).toBe('frobnicate-machine');
    expect(op.requestBody.content['application/json'].schema).toMatchObject({
      properties: { level: { enum: ['low', 'high'] } },
      required: ['level'],
      additionalProperties: false,
    });
    expect(op.responses['200'].content['application/json'].schema).toMatchObject({
      properties: { frobnicated: { type: 'boolean' } },
      required: ['frobnicated'],
    });
    expect(op.responses['409']['x-problem-codes']).toContain('already-frobnicated');
  });
});
