import { OpenApiGeneratorV31, OpenAPIRegistry, zodToOpenAPIRegistry, type ResponseConfig, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import * as z from 'zod';
import { instanceResponse } from '#domain/schemas.ts';
import { problemContentType, type Problem } from '#http/problem.ts';
import type { HttpMethod, Route } from '#http/route.ts';
import { version } from '#http/version.ts';

// The OpenAPI 3.1 document, made by @asteasolutions/zod-to-openapi from the route table: the same zod schemas
// the api handler validates with, the route's summary, roles and problem codes. Nothing here is a hand-written
// JSON Schema; a route added to the table is in the document the next time it is generated.

/** RFC 9457 problem document (functions/http/problem.ts), as zod so the document can show it. */
export const problemSchema = z.object({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  detail: z.string(),
  code: z.string(),
  errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
});
// Compile-time guard: the schema and problem.ts's `Problem` must describe the same object.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const problemShapeMatches: Same<z.infer<typeof problemSchema>, Problem> = true;
void problemShapeMatches;

/** Names under `components/schemas` for schemas several routes share. */
const componentNames = new Map<z.ZodType, string>([
  [problemSchema, 'Problem'],
  [instanceResponse, 'Instance'],
]);

const mutating: ReadonlySet<HttpMethod> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const idempotencyHeaders = z.object({
  'Idempotency-Key': z
    .string()
    .min(1)
    .max(255)
    .optional()
    .describe('Replays within 24 h with the same key and body return the first answer and change nothing; the same key with another body is 422.'),
});

/**
 * Success answers. The route table does not carry them (yet): a route may declare `status` (number or list),
 * otherwise these, otherwise 200. Keep in step with the handlers' `status:`.
 */
const successStatuses: Record<string, number[]> = {
  'create-instance': [201],
  'delete-instance': [202, 200],
  'release-instance': [202, 200],
  'add-health-override': [201],
  'remove-health-override': [204],
  'create-meta-instance': [201],
  'delete-meta-instance': [202],
};
const successDescriptions: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted: the change has started',
  204: 'No content',
};

const statusTitles: Record<number, string> = {
  400: 'Bad request',
  401: 'Missing or invalid bearer token',
  403: 'The token lacks the role or capability',
  404: "Not found (another org's resources are reported as not found)",
  409: 'Conflict',
  422: 'Unprocessable content',
  500: 'Internal error',
};

/** What api-handler.ts (and auth) answer for any route, besides the route's own `errors`. */
function commonErrors(route: Route): Array<[number, string]> {
  const errors: Array<[number, string]> = [];
  if (route.roles !== 'public') {
    errors.push([401, 'unauthenticated'], [401, 'invalid-token'], [403, 'forbidden'], [404, 'not-found']);
  }
  if (route.body) errors.push([400, 'invalid-json']);
  errors.push([422, 'validation-failed']);
  if (mutating.has(route.method) && route.roles !== 'public') {
    errors.push([422, 'idempotency-key-reused'], [409, 'idempotency-in-progress'], [409, 'concurrent-update']);
  }
  errors.push([500, 'internal-error']);
  return errors;
}

function problemResponses(route: Route): Record<number, ResponseConfig> {
  const codes = new Map<number, Set<string>>();
  for (const [status, code] of [...commonErrors(route), ...(route.errors ?? [])]) {
    if (!codes.has(status)) codes.set(status, new Set());
    codes.get(status)!.add(code);
  }
  const responses: Record<number, ResponseConfig> = {};
  for (const [status, set] of [...codes].sort(([a], [b]) => a - b)) {
    const list = [...set];
    responses[status] = {
      description: `${statusTitles[status] ?? 'Error'}. Problem codes: ${list.map((c) => `\`${c}\``).join(', ')}`,
      content: { [problemContentType]: { schema: problemSchema } },
      // Listed for clients and tests; `code` in the body is one of these.
      'x-problem-codes': list,
    } as ResponseConfig;
  }
  return responses;
}

function successResponses(route: Route): Record<number, ResponseConfig> {
  const declared = (route as Route & { status?: number | readonly number[] }).status;
  const statuses = declared === undefined ? (successStatuses[route.operationId] ?? [200]) : typeof declared === 'number' ? [declared] : [...declared];
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      {
        description: successDescriptions[status] ?? 'Success',
        ...(status === 204 ? {} : { content: { 'application/json': route.response ? { schema: route.response } : {} } }),
      },
    ]),
  );
}

/** The table's params and query schemas are zod objects; the generator makes one parameter per key. */
const asObject = (schema: z.ZodType) => schema as z.ZodObject;

function operation(route: Route): RouteConfig {
  const isPublic = route.roles === 'public';
  const roles: string[] = route.roles === 'public' ? ['public'] : route.roles;
  return {
    method: route.method.toLowerCase() as RouteConfig['method'],
    path: route.path,
    operationId: route.operationId,
    summary: route.summary,
    description: isPublic ? 'Public: no token needed.' : `Roles: ${roles.join(', ')}.`,
    tags: [...roles],
    security: isPublic ? [] : [{ bearerAuth: [] }],
    'x-fleetward-roles': roles,
    request: {
      ...(route.params ? { params: asObject(route.params) } : {}),
      ...(route.query ? { query: asObject(route.query) } : {}),
      ...(mutating.has(route.method) && !isPublic ? { headers: idempotencyHeaders } : {}),
      ...(route.body
        ? { body: { required: route.bodyRequired ?? false, content: { 'application/json': { schema: route.body } } } }
        : {}),
    },
    responses: { ...successResponses(route), ...problemResponses(route) },
  };
}

// ---- what the generator cannot see -----------------------------------------------------------------------

type Def = { type: string; [key: string]: unknown };
const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** Adds documentation-only metadata to a schema (merged over what the generator makes of it). */
function annotate(schema: z.ZodType, metadata: Record<string, unknown>): void {
  const current = (zodToOpenAPIRegistry.get(schema) ?? {}) as Record<string, unknown>;
  zodToOpenAPIRegistry.add(schema, { ...current, ...metadata } as never);
}

const jsonSchemaOf = (schema: z.ZodType): Record<string, unknown> => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'input', target: 'draft-2020-12', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
};

/**
 * Walks a request schema and restores what zod-to-openapi 9 drops but the handlers enforce:
 * - record key rules (`labels` keys) become `propertyNames`;
 * - a string normalised by a transform and then checked against an enum (issue `category`, accepted in any letter
 *   case) is documented with the enum's values.
 * The drift test (test/unit/openapi-drift.test.ts) fails when something like this is missing.
 */
function restoreConstraints(schema: z.ZodType | undefined, seen = new Set<z.ZodType>()): void {
  if (!schema || seen.has(schema)) return;
  seen.add(schema);
  const def = defOf(schema);
  const walk = (child: unknown) => restoreConstraints(child as z.ZodType | undefined, seen);
  switch (def.type) {
    case 'object':
      Object.values(def.shape as Record<string, z.ZodType>).forEach(walk);
      break;
    case 'record': {
      const keyType = def.keyType as z.ZodType;
      if (defOf(keyType).type === 'string') annotate(schema, { propertyNames: jsonSchemaOf(keyType) });
      walk(def.valueType);
      break;
    }
    case 'array':
      walk(def.element);
      break;
    case 'union':
      (def.options as z.ZodType[]).forEach(walk);
      break;
    case 'intersection':
      walk(def.left);
      walk(def.right);
      break;
    case 'pipe': {
      const input = defOf(def.in as z.ZodType);
      const output = defOf(def.out as z.ZodType);
      const normalisedString = input.type === 'pipe' && defOf(input.in as z.ZodType).type === 'string' && defOf(input.out as z.ZodType).type === 'transform';
      if (normalisedString && output.type === 'enum') {
        const values = Object.values(output.entries as Record<string, string>);
        annotate(schema, { enum: values, description: `One of ${values.join(', ')}; the server normalises the value (e.g. letter case) before checking it.` });
      }
      walk(def.in);
      walk(def.out);
      break;
    }
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'nonoptional':
    case 'catch':
      walk(def.innerType);
      break;
    default:
      break;
  }
}

// ---- the document ----------------------------------------------------------------------------------------

export type OpenApiDocument = ReturnType<OpenApiGeneratorV31['generateDocument']>;

export function openApiDocument(routes: Route[]): OpenApiDocument {
  for (const [schema, name] of componentNames) annotate(schema, { _internal: { refId: name } });
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'Claims: sub, org (the caller\'s tenant org), roles (tenant, provider-admin, site-agent).',
  });
  for (const route of routes) {
    for (const schema of [route.params, route.query, route.body]) restoreConstraints(schema);
    registry.registerPath(operation(route));
  }
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Fleetward',
      version,
      description:
        "Control plane of one site's bare-metal GPU fleet. Errors are RFC 9457 problem documents (application/problem+json) with a stable `code`. " +
        'Lists take ?limit= (1..500, default 50) and ?nextToken=. Every POST/PUT/PATCH/DELETE accepts Idempotency-Key.',
    },
  });
}
