import {
  extendZodWithOpenApi,
  OpenApiGeneratorV31,
  OpenAPIRegistry,
  zodToOpenAPIRegistry,
  type ResponseConfig,
  type RouteConfig,
} from '@asteasolutions/zod-to-openapi';
import * as z from 'zod';
import { maintenanceComponentNames } from '#domain/maintenance/maintenance-responses.ts';
import { componentNames } from '#domain/core/responses.ts';
import { problemContentType, type Problem } from '#http/problem.ts';
import type { HttpMethod, Responses, Route } from '#http/route.ts';
import { version } from '#http/version.ts';

// The OpenAPI 3.1 document, made by @asteasolutions/zod-to-openapi from the route table: the same zod schemas
// the api handler validates requests and answers with, the route's summary, roles, success statuses and problem
// codes. Nothing here is a hand-written JSON Schema, and nothing reads zod's internals: what the generator cannot
// derive is declared on the schemas (`.meta()`) or named below (component names). A route added to the table is in the document the
// next time it is generated.

// Only the generator needs zod's `.openapi()`: extending zod here keeps zod-to-openapi out of the function bundles,
// which never import this module (see openapi-served.ts). The domain's response schemas get their component names
// here too, on the very instances the routes use, so the document refers to them with `$ref`.
extendZodWithOpenApi(z);
for (const [schema, name] of [...componentNames, ...maintenanceComponentNames])
  zodToOpenAPIRegistry.add(schema, { ...zodToOpenAPIRegistry.get(schema), _internal: { refId: name } });

/** RFC 9457 problem document (functions/http/problem.ts), as zod so the document can show it. */
export const problemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.string(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    limit: z.number().int().optional().openapi({ description: 'With 413: the most bytes the route takes in one body' }),
    machineType: z.string().optional().openapi({ description: 'With 409 `quota-exceeded`: the machine type whose quota it is' }),
    quota: z.number().int().optional().openapi({ description: "With 409 `quota-exceeded`: the org's quota of that type" }),
    used: z.number().int().optional().openapi({ description: 'With 409 `quota-exceeded`: how many of them the org holds' }),
  })
  .openapi('Problem');
// Compile-time guard: the schema and problem.ts's `Problem` must describe the same object.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const problemShapeMatches: Same<z.infer<typeof problemSchema>, Problem> = true;
void problemShapeMatches;

const mutating: ReadonlySet<HttpMethod> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const idempotencyHeaders = z.object({
  'Idempotency-Key': z
    .string()
    .min(1)
    .max(255)
    .optional()
    .describe('Replays within 24 h with the same key and body return the first answer and change nothing; the same key with another body is 422.'),
});

const successDescriptions: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted: the change has started',
  204: 'No content',
};

const statusTitles: Record<number, string> = {
  400: 'Bad request',
  401: 'Missing or invalid bearer token: API Gateway answers `{"message":"Unauthorized"}` itself; a verified token without sub, org or roles is this problem',
  403: 'The token lacks the role or capability',
  404: "Not found (another org's resources are reported as not found)",
  409: 'Conflict',
  413: "The body is over the route's cap, or would make a record or change over DynamoDB's size limits; `limit` names the bytes",
  422: 'Unprocessable content',
  500: 'Internal error',
};

/** What api-handler.ts (and auth) answer for any route, besides the route's own `errors`. */
function commonErrors(route: Route): Array<[number, string]> {
  const errors: Array<[number, string]> = [];
  if (route.roles !== 'public') {
    errors.push([401, 'unauthenticated'], [403, 'forbidden'], [404, 'not-found']);
  }
  if (route.body) errors.push([400, 'invalid-json'], [413, 'payload-too-large']);
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

/** The route's own `responses`: each success status with its body schema, or no content. */
function successResponses(route: Route): Record<number, ResponseConfig> {
  const responses: Responses = route.responses;
  return Object.fromEntries(
    Object.entries(responses).map(([status, schema]) => [
      status,
      {
        description: successDescriptions[Number(status)] ?? 'Success',
        ...(schema ? { content: { 'application/json': { schema } } } : {}),
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
      ...(route.body ? { body: { required: route.bodyRequired ?? false, content: { 'application/json': { schema: route.body } } } } : {}),
    },
    responses: { ...successResponses(route), ...problemResponses(route) },
  };
}

// ---- the document ----------------------------------------------------------------------------------------

export type OpenApiDocument = ReturnType<OpenApiGeneratorV31['generateDocument']>;

export function openApiDocument(routes: readonly Route[]): OpenApiDocument {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: "Claims: sub, org (the caller's tenant org), roles (tenant, provider-admin, site-agent).",
  });
  for (const route of routes) registry.registerPath(operation(route));
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    // Relative to where the document is served: a deployed stack and the local runner both serve it at their API's
    // root (`GET /openapi.json`, the `$default` stage having no path of its own), so `/` is that API wherever it runs.
    servers: [{ url: '/', description: 'The API that serves this document' }],
    info: {
      title: 'Fleetward',
      version,
      description:
        "Control plane of one site's bare-metal GPU fleet. Errors are RFC 9457 problem documents (application/problem+json) with a stable `code`. " +
        'Lists take ?limit= (1..500, default 50) and ?nextToken=. Every POST/PUT/PATCH/DELETE accepts Idempotency-Key.',
    },
  });
}
