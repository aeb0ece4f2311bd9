import type { paths } from './api-types.ts';

// What the CLI and the dashboard know of the HTTP API, all read from client/api-types.ts (generated from the
// OpenAPI document): which paths take which method, their parameters, bodies and answers. Type-only: nothing here
// runs, so the dashboard's plain JS modules can import it in JSDoc.

export type { paths };
export type Method = 'get' | 'put' | 'post' | 'patch' | 'delete';
export type ApiPath = keyof paths;

/** The paths that answer `method`. */
export type PathsWith<M extends Method> = { [P in ApiPath]: paths[P] extends { [K in M]: object } ? P : never }[ApiPath];

type Operation<P extends ApiPath, M extends Method> = paths[P] extends { [K in M]: infer Op } ? Op : never;

/** Path, query and header parameters of an operation. */
export type Params<P extends ApiPath, M extends Method> = Operation<P, M> extends { parameters: infer Q } ? Q : never;
export type Query<P extends ApiPath, M extends Method> = NonNullable<Params<P, M> extends { query?: infer Q } ? Q : never>;

type JsonContent<R> = R extends { content: { 'application/json': infer B } } ? B : undefined;
type SuccessStatus = 200 | 201 | 202 | 204;
type Documented<P extends ApiPath, M extends Method> =
  Operation<P, M> extends { responses: infer R } ? { [S in keyof R]: S extends SuccessStatus ? JsonContent<R[S]> : never }[keyof R] : never;

/** The JSON body of a success answer (undefined for 204), as the route's response schema documents it. */
export type Answer<P extends ApiPath, M extends Method> = Documented<P, M>;

/** The JSON request body of an operation (never when it takes none). */
export type Body<P extends ApiPath, M extends Method> = Operation<P, M> extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;

/** The second argument of a call: `params` (required when the path has parameters) and `body` (when it takes one). */
// biome-ignore lint/complexity/noBannedTypes: `{} extends T` asks whether every key of T is optional
export type Init<P extends ApiPath, M extends Method> = ({} extends Params<P, M> ? { params?: Params<P, M> } : { params: Params<P, M> }) &
  ([Body<P, M>] extends [never] ? { body?: never } : Operation<P, M> extends { requestBody: object } ? { body: Body<P, M> } : { body?: Body<P, M> });

/** The rest parameters of a call: `init` may be left out when nothing in it is required. */
// biome-ignore lint/complexity/noBannedTypes: `{} extends T` asks whether every key of T is optional
export type InitArg<P extends ApiPath, M extends Method> = {} extends Init<P, M> ? [init?: Init<P, M>] : [init: Init<P, M>];

/** The GET routes that answer a page (`{ items, nextToken? }`), and the type of their items. */
export type ListPath = { [P in PathsWith<'get'>]: Answer<P, 'get'> extends { items: unknown[] } ? P : never }[PathsWith<'get'>];
export type Item<P extends ListPath> = Answer<P, 'get'> extends { items: Array<infer I> } ? I : never;
