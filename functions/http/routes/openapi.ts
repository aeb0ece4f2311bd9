import * as z from 'zod';
import { emptyQuery } from '#domain/core/schemas.ts';
import type { OpenApiDocument } from '#http/openapi.ts';
import { servedOpenApiDocument } from '#http/openapi-served.ts';
import { defineRoute, type Route } from '#http/route.ts';

let document: OpenApiDocument | undefined;

/**
 * `GET /openapi.json`, public: the document of the whole API, every group's routes (restish and other clients
 * discover it there), whichever function serves it.
 */
export const openApiRoute: Route = defineRoute({
  operationId: 'get-openapi',
  method: 'GET',
  path: '/openapi.json',
  roles: 'public',
  summary: 'This OpenAPI 3.1 document',
  query: emptyQuery,
  responses: { 200: z.record(z.string(), z.unknown()) },
  handle: async () => {
    document ??= await servedOpenApiDocument();
    return { status: 200, body: { ...document }, headers: { 'cache-control': 'public, max-age=300' } };
  },
});
