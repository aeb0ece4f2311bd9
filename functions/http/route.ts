import type { z } from 'zod';
import type { Requester } from '#domain/events/audit.ts';
import type { Principal, Role } from '#domain/core/model.ts';
import type { AppContext } from '#runtime/context.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RouteRequest<P, Q, B> {
  principal: Principal;
  /** The caller and the API request id, for what a provider action writes into the audit log. */
  requester: Requester;
  params: P;
  query: Q;
  body: B;
  headers: Record<string, string | undefined>;
}

/** Every success status a route answers with and its body schema; `null` is an answer without a body (204). */
export type Responses = Record<number, z.ZodType | null>;

/** An answer on its way out: a status, its body if it has one, extra headers. */
export interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** What a handler may answer: one of its declared statuses with a body its schema accepts. */
export type RouteResult<R extends Responses> = {
  [S in keyof R & number]: R[S] extends z.ZodType
    ? { status: S; body: z.input<R[S]>; headers?: Record<string, string> }
    : { status: S; body?: undefined; headers?: Record<string, string> };
}[keyof R & number];

/**
 * One API.md route, the whole contract: who may call it, what it takes, what it answers. The http layer
 * authenticates, checks `roles`, hides other orgs' `{org}` segments (404), validates params/query/body with the
 * zod schemas (422 problem on failure, nothing changed), applies Idempotency-Key to mutating methods, answers
 * through `responses` (the body parsed by the status's schema, so only what it lists goes out) and turns thrown
 * ProblemErrors into problem+json. Routes are static data: the context `C` arrives with each call.
 */
// biome-ignore lint/suspicious/noExplicitAny: a bare `Route` is a table entry, its own types erased (see AnyRoute)
export interface Route<P = any, Q = any, B = any, R extends Responses = any, C = AppContext> {
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
  /**
   * The most bytes one request body may have (DEFAULT_MAX_BODY_BYTES when absent); more is a 413 naming the limit.
   * Every route's worst case is held to Lambda's and DynamoDB's limits by test/unit/size-budgets.test.ts.
   */
  maxBodyBytes?: number;
  responses: R;
  /** Problem codes this route can answer with, for the OpenAPI document: `[status, code]`. */
  errors?: Array<[number, string]>;
  handle(request: RouteRequest<P, Q, B>, ctx: C): Promise<RouteResult<NoInfer<R>>>;
}

/**
 * Checks a route against its own schemas (handler input from params/query/body, answers from `responses`) and
 * returns it for the table. The return type is the table's on purpose: a generic one would let the table's type
 * flow back into inference and widen the handler's `status` literals.
 */
/** Enough for any body but the roster's and the registration's: 64 labels of 1 KB and an issue's text. */
export const DEFAULT_MAX_BODY_BYTES = 256 * 1024;
/** Registration's batch: under Lambda's 6 MB request with room for the event around it. */
export const REGISTRATION_MAX_BODY_BYTES = 5 * 1024 * 1024;

/** A route with its own params, query, body and responses erased, as a route table holds it. */
// biome-ignore lint/suspicious/noExplicitAny: the erasure itself; no other type accepts a handler whose answers are typed by its own responses
export type AnyRoute<C = AppContext> = Route<any, any, any, any, C>;

export const defineRoute = <P, Q, B, R extends Responses, C = AppContext>(route: Route<P, Q, B, R, C>): AnyRoute<C> => route;

/** A list answer (API.md "Lists"): `{ items, nextToken? }`. */
export const listResult = <T>(items: T[], nextToken?: string | undefined) => ({
  status: 200 as const,
  body: { items, ...(nextToken ? { nextToken } : {}) },
});
