import type { z } from 'zod';
import type { Principal, Role } from '#domain/model.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RouteRequest<P, Q, B> {
  principal: Principal;
  params: P;
  query: Q;
  body: B;
  headers: Record<string, string | undefined>;
}

export interface RouteResult {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/**
 * One API.md route. The http layer authenticates, checks `roles`, hides other orgs' `{org}` segments (404),
 * validates params/query/body with the zod schemas (422 problem on failure, nothing changed), applies
 * Idempotency-Key to mutating methods, and turns thrown ProblemErrors into problem+json.
 */
export interface Route<P = any, Q = any, B = any> {
  /** kebab-case, unique; becomes the OpenAPI operationId (e.g. `delete-instance`). */
  operationId: string;
  method: HttpMethod;
  /** API Gateway style, e.g. `/v2/org/{org}/nico/instance/{id}`. */
  path: string;
  /** Roles allowed to call it; `public` routes need no token. */
  roles: Role[] | 'public';
  summary: string;
  params?: z.ZodType<P>;
  query?: z.ZodType<Q>;
  /** When set, a missing body is parsed as `{}` unless `bodyRequired`. */
  body?: z.ZodType<B>;
  bodyRequired?: boolean;
  /** Documented response body, for the OpenAPI document. */
  response?: z.ZodType;
  /** Problem codes this route can answer with, for the OpenAPI document: `[status, code]`. */
  errors?: Array<[number, string]>;
  handle(request: RouteRequest<P, Q, B>): Promise<RouteResult>;
}

export const defineRoute = <P, Q, B>(route: Route<P, Q, B>): Route<P, Q, B> => route;

/** A list answer (API.md "Lists"): `{ items, nextToken? }`. */
export const listResult = (items: unknown[], nextToken?: string | undefined): RouteResult => ({
  status: 200,
  body: { items, ...(nextToken ? { nextToken } : {}) },
});
