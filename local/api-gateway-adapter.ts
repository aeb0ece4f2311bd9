import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, APIGatewayProxyEventV2WithJWTAuthorizer, Context } from 'aws-lambda';
import { ProblemError, problemResponse } from '#http/problem.ts';
import { createRouteMatcher, type MatchableRoute } from '#http/route-match.ts';
import type { Route } from '#http/route.ts';
import { routeGroupOf, type RouteGroup } from '#lib/api-routes.ts';
import { API_FUNCTION_OF } from '#lib/lambda-functions.ts';
import { lambdaContext } from './lambda-invocation.ts';
import { runAsFunction } from './function-scope.ts';
import { defaultMaxBodyBytes, readBody, RequestBodyError } from './request-body.ts';

/** Served before the Lambda handler, for what only the local runner has (`/_local/token`, `/health`, `/_sim/*`). */
export interface ExtraRoute {
  /** An HTTP method, or `*` for any. */
  method: string;
  /** Exact path, or a prefix when it ends with `*` (`/_sim/*`). */
  path: string;
  handle(req: IncomingMessage, res: ServerResponse): void | Promise<void>;
}

/** A route as API Gateway holds it: public ones have no authorizer, every other one the JWT authorizer. */
export interface GatewayRoute extends MatchableRoute {
  public: boolean;
  /** Whose function the route is integrated with. */
  group: RouteGroup;
}

/** The routes as API Gateway is given them (lib/api-routes.ts): each with the JWT authorizer unless public. */
export const gatewayRoutesOf = (routes: readonly Pick<Route, 'method' | 'path' | 'roles'>[]): GatewayRoute[] =>
  routes.map((route) => ({ method: route.method, path: route.path, public: route.roles === 'public', group: routeGroupOf(route) }));

export interface LocalHttpServerOptions {
  /** 0 picks a free port (tests). */
  port: number;
  host?: string;
  /** The routes the API declares; anything else is API Gateway's own 404. */
  routes: readonly GatewayRoute[];
  handler: (event: APIGatewayProxyEventV2WithJWTAuthorizer, context: Context) => Promise<unknown>;
  /** Resolves to the token's claims or rejects, as the API Gateway JWT authorizer would. */
  verifyToken: (token: string) => Promise<Record<string, unknown>>;
  extraRoutes?: ExtraRoute[];
  maxBodyBytes?: number;
  /**
   * The function's timeout (lib/function-timeouts.ts): the handler's context reports it, and a handler still running
   * then gets API Gateway's answer for a failed function, as Lambda stops it.
   */
  timeoutMs: number;
}

export interface LocalHttpServer {
  server: Server;
  port: number;
  url: string;
  close(): Promise<void>;
}

/** The way API Gateway hands claims to a Lambda: every value a string, arrays as `"[a b]"`. */
export function flattenClaims(claims: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(claims).map(([name, value]) => [
      name,
      Array.isArray(value) ? `[${value.join(' ')}]` : typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value),
    ]),
  );
}

const sendProblem = (res: ServerResponse, error: ProblemError, headers: Record<string, string> = {}) => {
  const { statusCode, headers: problemHeaders, body } = problemResponse(error, headers);
  res.writeHead(statusCode, problemHeaders).end(body);
};

/**
 * What API Gateway itself answers, before any Lambda runs: JSON `{ "message" }`, not a problem document (see
 * docs/api.md "Errors from the gateway").
 */
const sendGatewayAnswer = (res: ServerResponse, status: 401 | 404, headers: Record<string, string> = {}) => {
  const body = JSON.stringify({ message: status === 401 ? 'Unauthorized' : 'Not Found' });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers }).end(body);
};

/** The JWT authorizer's challenges: a bare scheme when no token came, `invalid_token` when one was refused. */
const challenges = { missing: 'Bearer', invalid: 'Bearer scope="" error="invalid_token"' };

const matchesExtra = (route: ExtraRoute, method: string, path: string) =>
  (route.method === '*' || route.method.toUpperCase() === method) &&
  (route.path.endsWith('*') ? path.startsWith(route.path.slice(0, -1)) : path === route.path);

/**
 * The request target as API Gateway sees it: a path. Resolved against a base, `//openapi.json` would be a
 * scheme-relative URL of host `openapi.json` and path `/` (the dashboard); kept as a path it matches no route (404).
 */
const requestUrl = (target: string) => (target.startsWith('/') ? new URL(`http://localhost${target}`) : new URL(target, 'http://localhost'));

/** `12/Mar/2020:19:03:58 +0000`, as in `requestContext.time`. */
function apiGatewayTime(date: Date): string {
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const pad = (n: number) => String(n).padStart(2, '0');
  const time = [date.getUTCHours(), date.getUTCMinutes(), date.getUTCSeconds()].map(pad).join(':');
  return `${pad(date.getUTCDate())}/${months[date.getUTCMonth()]}/${date.getUTCFullYear()}:${time} +0000`;
}

function buildEvent(
  req: IncomingMessage,
  url: URL,
  body: string,
  requestId: string,
  routeKey: string,
  pathParameters: Record<string, string>,
): APIGatewayProxyEventV2 {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined && name !== 'cookie') headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  const cookies = req.headers.cookie
    ?.split(';')
    .map((c) => c.trim())
    .filter((c) => c !== '');
  // API Gateway joins repeated query parameters with commas. A Map keeps `__proto__` and `constructor` plain
  // names, as in the JSON event API Gateway sends, instead of prototype lookups or a silently dropped key.
  const joined = new Map<string, string>();
  for (const [name, value] of url.searchParams) joined.set(name, joined.has(name) ? `${joined.get(name)},${value}` : value);
  const query = Object.fromEntries(joined);
  const now = new Date();
  return {
    version: '2.0',
    routeKey,
    rawPath: url.pathname,
    rawQueryString: url.search.replace(/^\?/, ''),
    ...(cookies && cookies.length > 0 ? { cookies } : {}),
    headers,
    ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
    ...(Object.keys(pathParameters).length > 0 ? { pathParameters } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: (headers.host ?? 'localhost').split('.')[0]!,
      http: {
        method: (req.method ?? 'GET').toUpperCase(),
        path: url.pathname,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId,
      routeKey,
      stage: '$default',
      time: apiGatewayTime(now),
      timeEpoch: now.getTime(),
    },
    ...(body !== '' ? { body } : {}),
    isBase64Encoded: false,
  };
}

const timedOut = Symbol('timed out');

/**
 * The handler's result, or `timedOut` once the function's timeout passes first (the work left running is lost).
 * The timeout resolves after the timers phase it fired in (setImmediate): after a stall of this one process, Node runs
 * every due timer of one duration together, so one request's timeout could otherwise come before its handler's own
 * earlier answer (api-handler.ts), which never happens in AWS, where the gateway is not the function's process.
 */
async function withinTimeout<T>(invocation: Promise<T>, timeoutMs: number): Promise<T | typeof timedOut> {
  let timer: NodeJS.Timeout | undefined;
  const expiry = new Promise<typeof timedOut>((resolve) => (timer = setTimeout(() => setImmediate(() => resolve(timedOut)), timeoutMs)));
  try {
    return await Promise.race([invocation, expiry]);
  } finally {
    clearTimeout(timer);
  }
}

/** What API Gateway answers when the function fails or times out: a bare 500, the details in the function's logs. */
function sendFunctionFailed(res: ServerResponse): void {
  res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'Internal Server Error' }));
}

/** Lambda's v2 rules: a result without `statusCode` is a 200 JSON body. */
function writeResult(res: ServerResponse, result: unknown): void {
  if (typeof result === 'object' && result !== null && 'statusCode' in result) {
    const structured = result as {
      statusCode: number;
      headers?: Record<string, string | number | boolean>;
      cookies?: string[];
      body?: string;
      isBase64Encoded?: boolean;
    };
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(structured.headers ?? {})) headers[name.toLowerCase()] = String(value);
    if (structured.cookies?.length) headers['set-cookie'] = structured.cookies;
    const body = structured.body === undefined ? undefined : Buffer.from(structured.body, structured.isBase64Encoded ? 'base64' : 'utf8');
    res.writeHead(structured.statusCode, headers).end(body);
    return;
  }
  const body = typeof result === 'string' ? result : JSON.stringify(result ?? null);
  res.writeHead(200, { 'content-type': 'application/json' }).end(body);
}

/**
 * Plays API Gateway HTTP API for the local runner: chooses the route (or answers 404 itself), does what the JWT
 * authorizer of a protected route does (a missing or bad token never reaches the Lambda; public routes have no
 * authorizer, so a token there is not looked at), builds the payload v2.0 event and writes the Lambda's result
 * back as HTTP.
 */
export async function createLocalHttpServer(options: LocalHttpServerOptions): Promise<LocalHttpServer> {
  const { handler, verifyToken, extraRoutes = [], maxBodyBytes = defaultMaxBodyBytes, timeoutMs } = options;
  const router = createRouteMatcher(options.routes);

  const serve = async (req: IncomingMessage, res: ServerResponse) => {
    const url = requestUrl(req.url ?? '/');
    const method = (req.method ?? 'GET').toUpperCase();
    const extra = extraRoutes.find((route) => matchesExtra(route, method, url.pathname));
    if (extra) return extra.handle(req, res);

    const requestId = randomUUID();
    // API Gateway names the request on every answer, its own refusals included.
    res.setHeader('apigw-requestid', requestId);
    const matched = router.match(method, url.pathname);
    if (!matched) return sendGatewayAnswer(res, 404);

    let claims: Record<string, string> | undefined;
    if (!matched.route.public) {
      const authorization = req.headers.authorization;
      if (authorization === undefined) return sendGatewayAnswer(res, 401, { 'www-authenticate': challenges.missing });
      const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
      const verified = token ? await verifyToken(token).catch(() => undefined) : undefined;
      if (!verified) return sendGatewayAnswer(res, 401, { 'www-authenticate': challenges.invalid });
      claims = flattenClaims(verified);
    }

    let body: string;
    try {
      body = await readBody(req, maxBodyBytes);
    } catch (error) {
      if (!(error instanceof RequestBodyError)) throw error;
      return sendProblem(res, new ProblemError(error.status, error.code, error.message), { connection: 'close' });
    }

    const event = buildEvent(req, url, body, requestId, `${matched.route.method} ${matched.route.path}`, matched.params);
    if (claims) Object.assign(event.requestContext, { authorizer: { jwt: { claims, scopes: null } } });
    // As the group's own function: its AWS calls are that function's role's (function-scope.ts).
    const invocation = runAsFunction(API_FUNCTION_OF[matched.route.group], () =>
      handler(event as APIGatewayProxyEventV2WithJWTAuthorizer, lambdaContext('fleetward-api-local', requestId, timeoutMs)),
    );
    const result = await withinTimeout(invocation, timeoutMs);
    // API Gateway (HTTP API) names every request's id in this response header: the key to its logs.
    res.setHeader('apigw-requestid', requestId);
    if (result === timedOut) {
      console.error(`local api gateway: ${event.routeKey} (${requestId}) ran past the function's ${timeoutMs} ms timeout`);
      return sendFunctionFailed(res);
    }
    writeResult(res, result);
  };

  const server = createServer((req, res) => {
    serve(req, res).catch((error: unknown) => {
      // What API Gateway does when the integration fails: a bare 500; the details stay in our log.
      console.error('local api gateway: request failed', error);
      if (!res.headersSent) sendProblem(res, new ProblemError(500, 'internal-error', 'An internal error occurred'));
      else res.end();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port, address } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;

  return {
    server,
    port,
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
