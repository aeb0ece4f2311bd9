import { IdempotencyAlreadyInProgressError, IdempotencyConfig, IdempotencyValidationError, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import middy, { type MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2WithJWTAuthorizer, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { Principal } from '#domain/core/model.ts';
import { answerThrough } from '#http/answer.ts';
import { principalFromEvent } from '#http/auth.ts';
import { classifyError, outOfTime } from '#http/classify-error.ts';
import { createRouteMatcher, normalisePath } from '#http/route-match.ts';
import { ProblemError, problemResponse } from '#http/problem.ts';
import { DEFAULT_MAX_BODY_BYTES, type Answer, type AnyRoute, type HttpMethod, type RouteRequest } from '#http/route.ts';
import { validateParts, validationFailed } from '#http/validation.ts';
import { CORRELATION_KEY } from '#runtime/request-scope.ts';

export type ApiEvent = APIGatewayProxyEventV2WithJWTAuthorizer;
export type ApiResult = APIGatewayProxyStructuredResultV2;
export type ApiHandler = (event: ApiEvent, context: Context) => Promise<ApiResult>;

export interface ApiHandlerDeps<C = unknown> {
  /** Without it `Idempotency-Key` is ignored (handy for tests of routes alone); every deployment sets it. */
  idempotency?: {
    client: DynamoDBDocumentClient;
    tableName: string;
    /** How long a remembered response is replayed: API.md promises 24 h. */
    expiresAfterSeconds?: number;
  };
  logger?: Logger;
  /**
   * The context the routes of one request are called with (e.g. one that stamps its commits); `ctx` itself by
   * default. `deadline`: when the request must have answered (epoch ms), if the invocation says.
   */
  forRequest?: (ctx: C, requestId: string, deadline?: number) => C;
}

/** Callers of public routes that sent no token. */
export const anonymous: Principal = { sub: 'anonymous', org: '', roles: [] };

const mutatingMethods = new Set<string>(['POST', 'PUT', 'PATCH', 'DELETE']);
/** How long before the function's deadline an unfinished request is answered: time for the answer to leave. */
const ANSWER_MARGIN_MS = 250;
const idempotencyHeader = 'idempotency-key';
const maxIdempotencyKeyLength = 255;

// ---- route table -------------------------------------------------------------------------------------------

/** Routing, auth and validation never look at the context a route is called with. */
type TableRoute = AnyRoute<unknown>;

function createRouter(routes: readonly TableRoute[]) {
  const matcher = createRouteMatcher(routes);
  const byRouteKey = new Map(routes.map((route) => [`${route.method} ${route.path}`, route]));

  return (event: ApiEvent): { route: TableRoute; params: Record<string, string> } => {
    // API Gateway has chosen the route (routeKey) and answered unmatched requests itself; a `$default` event is
    // routed here.
    const chosen = event.routeKey !== '$default' ? byRouteKey.get(event.routeKey) : undefined;
    if (chosen) {
      const params = (event.pathParameters as Record<string, string> | undefined) ?? matcher.paramsOf(chosen, event.rawPath) ?? {};
      return { route: chosen, params };
    }
    const hit = matcher.match(event.requestContext.http.method, event.rawPath);
    if (!hit) throw new ProblemError(404, 'route-not-found', `No route for ${event.requestContext.http.method.toUpperCase()} ${normalisePath(event.rawPath)}`);
    return hit;
  };
}

// ---- middlewares -----------------------------------------------------------------------------------------

/** What the middlewares learn about a request, for the handler at the end of the chain. */
interface ApiState {
  route: TableRoute;
  principal: Principal;
  authenticated: boolean;
  params: Record<string, string>;
  body: unknown;
}
type ApiContext = Context & { api: ApiState };

/**
 * Routing and authorization come before anything reads the body: an unauthenticated or foreign-org caller
 * learns nothing from how we would have judged their input.
 */
const resolveRoute = (router: ReturnType<typeof createRouter>): MiddlewareObj<ApiEvent, ApiResult, Error, ApiContext> => ({
  before: ({ event, context }) => {
    const { route, params } = router(event);
    const authorizer = (event.requestContext as { authorizer?: unknown }).authorizer;
    const authenticated = route.roles !== 'public' || authorizer !== undefined;
    const principal = authenticated ? principalFromEvent(event) : anonymous;
    if (route.roles !== 'public') {
      const allowed = route.roles;
      if (!principal.roles.some((role) => allowed.includes(role))) {
        throw new ProblemError(403, 'forbidden', `This route needs one of the roles: ${allowed.join(', ')}`);
      }
      // Provider admins act across orgs (e.g. PUT /admin/tenants/{org}); everyone else only sees their own.
      const acrossOrgs = principal.roles.includes('provider-admin') && allowed.includes('provider-admin');
      if (params.org !== undefined && params.org !== principal.org && !acrossOrgs) {
        throw new ProblemError(404, 'not-found', `${event.rawPath} was not found`);
      }
    }
    context.api = { route, principal, authenticated, params, body: undefined };
  },
});

/** A route without a body schema never looks at the body, so a stray one on GET/DELETE is harmless. */
const parseJsonBody: MiddlewareObj<ApiEvent, ApiResult, Error, ApiContext> = {
  before: ({ event, context }) => {
    const { route } = context.api;
    if (!route.body) return;
    const raw = event.body === undefined ? '' : event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
    const limit = route.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    const size = Buffer.byteLength(raw);
    if (size > limit) {
      throw new ProblemError(
        413,
        'payload-too-large',
        `The request body is ${size} bytes; ${route.method} ${route.path} takes at most ${limit}`,
        undefined,
        limit,
      );
    }
    if (raw.trim() === '') {
      if (route.bodyRequired) throw validationFailed([{ path: '', message: 'A JSON request body is required' }]);
      context.api.body = {};
      return;
    }
    try {
      context.api.body = JSON.parse(raw);
    } catch {
      throw new ProblemError(400, 'invalid-json', 'The request body is not valid JSON');
    }
  },
};

/** Problems answer as problem+json; anything else is our bug: logged in full, answered without detail. */
const problemErrors = (logger: Logger): MiddlewareObj<ApiEvent, ApiResult, Error, ApiContext> => ({
  onError: (request) => {
    const { error, context } = request;
    const problem = classifyError(error);
    if (problem) {
      // A client error the store's SDK raised is still worth seeing: it may be a check we lack.
      if (!(error instanceof ProblemError)) logger.warn('client input refused by the store', { route: context.api?.route.operationId, error: error as Error });
      request.response = problemResponse(problem);
      return;
    }
    logger.error('unhandled error', { requestId: request.event.requestContext?.requestId, route: context.api?.route.operationId, error: error as Error });
    request.response = problemResponse(
      new ProblemError(
        500,
        'internal-error',
        `An internal error occurred (request ${request.event.requestContext?.requestId ?? context.awsRequestId ?? 'unknown'})`,
      ),
    );
  },
});

// ---- responses and idempotency -----------------------------------------------------------------------------

function toResult(result: Answer): ApiResult {
  if (result.status === 204 || result.body === undefined) {
    return { statusCode: result.status, headers: { ...result.headers } };
  }
  return {
    statusCode: result.status,
    headers: { 'content-type': 'application/json', ...result.headers },
    body: JSON.stringify(result.body),
  };
}

/** Thrown inside the idempotent call so Powertools forgets the key: only 2xx answers are worth replaying. */
class NotRemembered extends Error {
  readonly result: ApiResult;
  constructor(result: ApiResult) {
    super('response not remembered');
    this.result = result;
  }
}

/**
 * Idempotency-Key via Powertools: the record's key hashes `scope` (caller, method, concrete path, header value),
 * its validation hash covers `request` (the JSON body as sent and the query), and its stored data is the complete
 * HTTP result, so a replay answers byte for byte what the first call answered.
 */
interface IdempotencyPayload {
  scope: { sub: string; org: string; method: string; path: string; key: string };
  request: { body: unknown; query: unknown };
}

function createIdempotentRunner(options: NonNullable<ApiHandlerDeps['idempotency']>) {
  const persistenceStore = new DynamoDBPersistenceLayer({
    tableName: options.tableName,
    keyAttr: 'id',
    // The document client shares its DynamoDBClient's config and middleware stack, so plain commands go through.
    awsSdkV3Client: options.client as unknown as DynamoDBClient,
  });
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'scope',
    payloadValidationJmesPath: 'request',
    expiresAfterSeconds: options.expiresAfterSeconds ?? 24 * 60 * 60,
    hashFunction: 'sha256',
    responseHook: (response) => {
      const result = response as ApiResult;
      return { ...result, headers: { ...result.headers, 'idempotent-replayed': 'true' } };
    },
  });
  // The context argument lets Powertools bound an INPROGRESS record by the invocation's remaining time.
  const run = makeIdempotent(
    async (_payload: IdempotencyPayload, _context: Context, execute: () => Promise<ApiResult>) => {
      const result = await execute();
      const status = result.statusCode ?? 200;
      if (status < 200 || status > 299) throw new NotRemembered(result);
      // Through JSON once so the stored record holds exactly what we send (no undefined, no class instances).
      return JSON.parse(JSON.stringify(result)) as ApiResult;
    },
    { persistenceStore, config, keyPrefix: 'fleetward-http' },
  );

  return async (payload: IdempotencyPayload, context: Context, execute: () => Promise<ApiResult>): Promise<ApiResult> => {
    const lambdaContext = typeof context.getRemainingTimeInMillis === 'function' ? context : withDeadline(context);
    try {
      return (await run(payload, lambdaContext, execute)) as ApiResult;
    } catch (error) {
      if (error instanceof NotRemembered) return error.result;
      if (error instanceof IdempotencyValidationError) {
        throw new ProblemError(422, 'idempotency-key-reused', 'This Idempotency-Key was used with a different request body');
      }
      if (error instanceof IdempotencyAlreadyInProgressError) {
        throw new ProblemError(409, 'idempotency-in-progress', 'A request with this Idempotency-Key is still in progress; retry later');
      }
      throw error;
    }
  };
}

/** Contexts made outside Lambda may lack the clock; API Gateway's 30 s limit is the natural bound. */
const withDeadline = (context: Context): Context => {
  const deadline = Date.now() + 30_000;
  return { ...context, getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()) };
};

function idempotencyKeyOf(event: ApiEvent, method: HttpMethod): string | undefined {
  if (!mutatingMethods.has(method)) return undefined;
  const key = event.headers?.[idempotencyHeader];
  if (key === undefined) return undefined;
  if (key.trim() === '' || key.length > maxIdempotencyKeyLength) {
    throw validationFailed([{ path: `headers.${idempotencyHeader}`, message: `Must be 1..${maxIdempotencyKeyLength} characters` }]);
  }
  return key;
}

const lowerCaseHeaders = (headers: ApiEvent['headers'] | undefined) =>
  Object.fromEntries(Object.entries(headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]));

// ---- the handler ---------------------------------------------------------------------------------------------

/**
 * One Lambda handler for a route table: routing, authentication, authorization, JSON, validation, idempotency,
 * answers checked against each route's `responses` and problem+json all happen here, so route handlers only
 * decide and write. `ctx` is what every route handler is called with.
 */
export function createApiHandler<C>(routes: readonly AnyRoute<C>[], ctx: C, deps: ApiHandlerDeps<C> = {}): ApiHandler {
  const logger = deps.logger ?? new Logger({ serviceName: 'fleetward-api' });
  const runIdempotently = deps.idempotency ? createIdempotentRunner(deps.idempotency) : undefined;

  const dispatch = async (event: ApiEvent, context: ApiContext): Promise<ApiResult> => {
    const { route, principal, authenticated, params, body } = context.api;
    const query = event.queryStringParameters ?? {};
    const valid = validateParts({ params: route.params, query: route.query, body: route.body }, { params, query, body });
    const requester = { actor: principal.sub, requestId: event.requestContext.requestId };
    const request: RouteRequest<unknown, unknown, unknown> = { principal, requester, ...valid, headers: lowerCaseHeaders(event.headers) };
    const deadline = typeof context.getRemainingTimeInMillis === 'function' ? Date.now() + context.getRemainingTimeInMillis() : undefined;
    const routeCtx = deps.forRequest ? deps.forRequest(ctx, event.requestContext.requestId, deadline) : ctx;
    const execute = async () => toResult(answerThrough(route, await route.handle(request, routeCtx)));

    const key = idempotencyKeyOf(event, route.method);
    // Anonymous callers share one identity, so their keys could collide: no idempotency for them.
    if (key === undefined || !runIdempotently || !authenticated) return execute();
    const scope = { sub: principal.sub, org: principal.org, method: route.method, path: normalisePath(event.rawPath), key };
    return runIdempotently({ scope, request: { body, query } }, context, execute);
  };

  // Answer before the function's own deadline, so the caller gets a 503 to retry rather than API Gateway's bare 500.
  const handler = middy<ApiEvent, ApiResult, Error, ApiContext>(dispatch, {
    timeoutEarlyInMillis: ANSWER_MARGIN_MS,
    timeoutEarlyResponse: () => {
      throw outOfTime();
    },
  })
    .use(resolveRoute(createRouter(routes)))
    .use(parseJsonBody)
    // Last in the chain (DESIGN.md): middy runs onError in reverse, so it sees every error first and answers it.
    .use(problemErrors(logger));
  // One line per request, under its id: where the story of a request starts in the logs.
  return async (event, context) => {
    const result = await (handler as unknown as ApiHandler)(event, context);
    logger.info('request', {
      [CORRELATION_KEY]: event.requestContext.requestId,
      method: event.requestContext.http.method,
      path: event.rawPath,
      status: result.statusCode,
    });
    return result;
  };
}
