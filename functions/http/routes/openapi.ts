import * as z from 'zod';
import { emptyQuery } from '#domain/schemas.ts';
import type { OpenApiDocument } from '#http/openapi.ts';
import { servedOpenApiDocument } from '#http/openapi-served.ts';
import { defineRoute, type Route } from '#http/route.ts';

/**
 * `GET /openapi.json`, public: the document of the route table it is part of (restish and other clients
 * discover it there). `table` is read at the first request, so the document always lists every route served.
 */
export function openApiRoute(table: () => readonly Route[]): Route {
  let document: OpenApiDocument | undefined;
  return defineRoute({
    operationId: 'get-openapi',
    method: 'GET',
    path: '/openapi.json',
    roles: 'public',
    summary: 'This OpenAPI 3.1 document',
    query: emptyQuery,
    responses: { 200: z.record(z.string(), z.unknown()) },
    handle: async () => {
      document ??= await servedOpenApiDocument(table);
      return { status: 200, body: { ...document }, headers: { 'cache-control': 'public, max-age=300' } };
    },
  });
}
