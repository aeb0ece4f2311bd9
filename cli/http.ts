import createFetchClient from 'openapi-fetch';
import type { Answer, Init, InitArg, Item, ListPath, Method, paths, PathsWith } from '#client/api.ts';
import { version } from '#http/version.ts';
import type { Connection } from './config.ts';
import { ApiError, CliError, type ProblemDocument } from './errors.ts';

// The CLI's only way to the API: the typed client generated from the OpenAPI document (client/api-types.ts,
// through openapi-fetch). Paths, parameters, bodies and answers are checked against it; problems become ApiError.

export const noToken = 'no token: give --token, set FLEETWARD_TOKEN or add one to a profile (fleetward profile set)';

type Call<M extends Method> = <P extends PathsWith<M>>(path: P, ...init: InitArg<P, M>) => Promise<Answer<P, M>>;

export interface Client {
  readonly url: string;
  get: Call<'get'>;
  post: Call<'post'>;
  put: Call<'put'>;
  patch: Call<'patch'>;
  delete: Call<'delete'>;
  /** Follows `nextToken` until the list ends or `max` items were read. */
  list<P extends ListPath>(path: P, init: Init<P, 'get'>, max?: number): Promise<Array<Item<P>>>;
  /** The local runner's POST /_local/token (`npm start`; not part of the API, so not in its document). */
  mintLocalToken(subject: { sub: string; org: string; roles: string[] }): Promise<string>;
}

interface UntypedInit {
  params?: { query?: object; path?: object; header?: object };
  body?: unknown;
}

function problemOf(response: Response, body: unknown): ProblemDocument {
  if (typeof body === 'object' && body !== null) {
    const problem = body as Partial<ProblemDocument> & { message?: string };
    // API Gateway's own refusals (e.g. its JWT authorizer) answer `{ "message": "Unauthorized" }`.
    return { ...problem, status: response.status, detail: problem.detail ?? problem.message ?? response.statusText };
  }
  return { status: response.status, detail: (typeof body === 'string' && body.trim()) || response.statusText };
}

export function createClient(connection: Connection): Client {
  const api = createFetchClient<paths>({
    baseUrl: connection.url,
    headers: { accept: 'application/json, application/problem+json', 'user-agent': `fleetward-cli/${version}` },
  });

  const send = async (method: Method, path: string, init: UntypedInit = {}, anonymous = false): Promise<unknown> => {
    if (!anonymous && !connection.token) throw new CliError(noToken, 2);
    const headers = anonymous ? {} : { authorization: `Bearer ${connection.token}` };
    let result: { data?: unknown; error?: unknown; response: Response };
    try {
      // The typed signatures above checked path and init; openapi-fetch's own overloads cannot follow a generic method.
      result = await api.request(method as never, path as never, { ...init, headers } as never);
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new CliError(`cannot reach ${connection.url} (${cause?.code ?? cause?.message ?? (error as Error).message})`);
    }
    if (!result.response.ok) throw new ApiError(problemOf(result.response, result.error));
    return result.data;
  };
  const call =
    <M extends Method>(method: M): Call<M> =>
    (path, ...init) =>
      send(method, path, init[0] as UntypedInit | undefined) as never;

  return {
    url: connection.url,
    get: call('get'),
    post: call('post'),
    put: call('put'),
    patch: call('patch'),
    delete: call('delete'),
    async list(path, init, max = Infinity) {
      const items: Array<Item<typeof path>> = [];
      const { params = {} } = init as UntypedInit;
      let nextToken: string | undefined;
      do {
        const limit = Math.min(500, max - items.length);
        const page = (await send('get', path, { params: { ...params, query: { ...params.query, limit, nextToken } } })) as {
          items: Array<Item<typeof path>>;
          nextToken?: string;
        };
        items.push(...page.items);
        nextToken = page.nextToken;
      } while (nextToken && items.length < max);
      return items;
    },
    async mintLocalToken(subject) {
      const { token } = (await send('post', '/_local/token', { body: subject }, true)) as { token: string };
      return token;
    },
  };
}

/** The claims of a JWT, read without verifying it (the API verifies); undefined when it is not a JWT. */
export function tokenClaims(token: string | undefined): { sub?: string; org?: string; roles: string[] } | undefined {
  const payload = token?.split('.')[1];
  if (!payload) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
    const raw = claims.roles;
    const roles = Array.isArray(raw)
      ? raw.map(String)
      : typeof raw === 'string'
        ? raw
            .replace(/^\[|\]$/g, '')
            .split(/[\s,]+/)
            .filter(Boolean)
        : [];
    return {
      ...(typeof claims.sub === 'string' ? { sub: claims.sub } : {}),
      ...(typeof claims.org === 'string' ? { org: claims.org } : {}),
      roles,
    };
  } catch {
    return undefined;
  }
}
