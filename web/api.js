// The Fleetward HTTP API as the dashboard uses it: GETs with a provider-admin bearer token.
//
// Typed by the same generated client types as the CLI (client/api.ts over client/api-types.ts), through JSDoc:
// `npx tsc --noEmit` checks this file (checkJs) against the OpenAPI document, and the browser loads it as it is.
// The CLI's runtime client (openapi-fetch) is not used here: the browser cannot import a bare npm specifier
// without a bundle or an import map, and the dashboard's CSP (`default-src 'self'`) forbids the inline script an
// import map needs. A bundle would add a build step to `npm start`, the tests and the CDK deployment; the few
// lines below (path parameters, query) are all a GET needs, and their paths and answers are still type-checked.

/** @import { Answer, InitArg, Item, ListPath, PathsWith } from '../client/api.ts' */

const TOKEN_KEY = 'fleetward.dashboard.token';
const LOCAL_SUBJECT = { sub: 'dashboard', org: 'provider', roles: ['provider-admin'] };

export class ApiError extends Error {
  /** @param {string} path @param {number} status @param {any} problem */
  constructor(path, status, problem) {
    const code = problem?.code ? ` ${problem.code}` : '';
    // Fleetward answers problem documents; API Gateway's own refusals are `{ "message": "Not Found" }`.
    const detail = problem?.detail ?? problem?.message ?? problem?.title ?? (typeof problem === 'string' && problem ? problem : 'no detail');
    super(`GET ${path}: ${status}${code}: ${detail}`);
    this.path = path;
    this.status = status;
    this.problem = problem;
  }
}

/** Thrown when there is no token the API accepts and none can be had without asking the person. */
export class SignInNeeded extends Error {}

/** Where the API is: `apiUrl` in config.json next to index.html (deployments write it), else this origin. */
export async function apiBaseUrl() {
  try {
    const response = await fetch('config.json', { cache: 'no-cache' });
    if (response.ok) {
      const config = await response.json();
      if (typeof config.apiUrl === 'string') return config.apiUrl.replace(/\/+$/, '');
    }
  } catch {
    // no config.json: same origin
  }
  return '';
}

/** @param {string} baseUrl */
export function createApi(baseUrl) {
  let token = sessionStorage.getItem(TOKEN_KEY) ?? '';
  /** false once the local runner's token route is known to be absent. */
  let localTokens = true;
  /** @type {Promise<string> | null} */
  let minting = null;

  /** The local runner mints tokens at POST /_local/token; a deployed API has no such route. */
  async function mintLocal() {
    if (!localTokens) throw new SignInNeeded('This API needs a bearer token with the provider-admin role.');
    minting ??= (async () => {
      try {
        const response = await fetch(`${baseUrl}/_local/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(LOCAL_SUBJECT),
        }).catch(() => null);
        if (!response?.ok) {
          localTokens = false;
          throw new SignInNeeded('This API needs a bearer token with the provider-admin role.');
        }
        setToken((await response.json()).token);
        return token;
      } finally {
        minting = null;
      }
    })();
    return minting;
  }

  /** @param {string} value */
  function setToken(value) {
    token = value.trim();
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  }

  /** The parsed JSON body of a GET, or an ApiError. A refused token is replaced once (locally) or needs sign-in. */
  async function fetchJson(/** @type {string} */ target, retried = false) {
    if (!token) await mintLocal();
    let response;
    try {
      response = await fetch(`${baseUrl}${target}`, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
    } catch (error) {
      throw new ApiError(target, 0, { detail: `network error: ${error instanceof Error ? error.message : String(error)}` });
    }
    const text = await response.text();
    /** @type {any} */
    let body = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      // keep the text
    }
    if (response.status === 401) {
      setToken('');
      if (!retried && localTokens) return fetchJson(target, true);
      throw new SignInNeeded(`The token was refused (${body?.detail ?? body?.message ?? '401'}). Sign in again.`);
    }
    if (!response.ok) throw new ApiError(target, response.status, body);
    return body;
  }

  /**
   * GET a route of the API: `get('/admin/machines/{id}', { params: { path: { id } } })`.
   * @template {PathsWith<'get'>} P
   * @param {P} path
   * @param {InitArg<P, 'get'>} init
   * @returns {Promise<Answer<P, 'get'>>}
   */
  function get(path, ...init) {
    return fetchJson(urlOf(path, init[0]?.params));
  }

  /**
   * The items of a list route, following `nextToken` up to `maxPages` pages; `limit` is sent when given.
   * @template {ListPath} P
   * @param {P} path
   * @param {InitArg<P, 'get'>[0]} [init]
   * @param {{ limit?: number, maxPages?: number }} [paging]
   * @returns {Promise<Array<Item<P>>>}
   */
  async function list(path, init, { limit, maxPages = Infinity } = {}) {
    /** @type {Array<Item<P>>} */
    const items = [];
    /** @type {string | undefined} */
    let nextToken;
    let pages = 0;
    do {
      const given = /** @type {{ path?: object, query?: object }} */ (init?.params ?? {});
      const params = { ...given, query: { ...given.query, limit, nextToken } };
      const page = /** @type {{ items: Array<Item<P>>, nextToken?: string }} */ (await fetchJson(urlOf(path, params)));
      items.push(...page.items);
      nextToken = page.nextToken;
      pages += 1;
    } while (nextToken && pages < maxPages);
    return items;
  }

  /**
   * Runs `fn`; null when it fails with 404 (a route this API does not have yet).
   * @template T
   * @param {() => Promise<T>} fn
   * @returns {Promise<T | null>}
   */
  async function optional(fn) {
    try {
      return await fn();
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return null;
      throw error;
    }
  }

  /** A person who signs out means to give another token: stop minting local ones. */
  function signOut() {
    localTokens = false;
    setToken('');
  }

  return { get, list, optional, setToken, signOut };
}

/**
 * `/admin/machines/{id}` with its path parameters filled in (each one path segment) and the query appended.
 * @param {string} path
 * @param {unknown} params the call's `params`, already checked against the route by get()/list()'s types
 */
function urlOf(path, params) {
  const { path: values = {}, query: search = {} } = /** @type {{ path?: Record<string, string>, query?: Record<string, unknown> }} */ (params ?? {});
  const filled = path.replace(/\{(\w+)\}/g, (_, name) => encodeURIComponent(values[name] ?? ''));
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(search)) if (value !== undefined) query.set(name, String(value));
  const text = query.toString();
  return text ? `${filled}?${text}` : filled;
}
