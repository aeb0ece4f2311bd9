// The Fleetward HTTP API as the dashboard uses it: GETs with a provider-admin bearer token.

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

  /** GET a path; the parsed JSON body, or an ApiError. A refused token is replaced once (locally) or needs sign-in. */
  async function get(path, retried = false) {
    if (!token) await mintLocal();
    let response;
    try {
      response = await fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
    } catch (error) {
      throw new ApiError(path, 0, { detail: `network error: ${error instanceof Error ? error.message : String(error)}` });
    }
    const text = await response.text();
    let body = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      // keep the text
    }
    if (response.status === 401) {
      setToken('');
      if (!retried && localTokens) return get(path, true);
      throw new SignInNeeded(`The token was refused (${body?.detail ?? body?.message ?? '401'}). Sign in again.`);
    }
    if (!response.ok) throw new ApiError(path, response.status, body);
    return body;
  }

  /** The items of a list route, following `nextToken` up to `maxPages` pages. `limit` is sent when given. */
  async function list(path, limit = undefined, maxPages = Infinity) {
    const items = [];
    let next;
    let pages = 0;
    do {
      const query = [limit ? `limit=${limit}` : '', next ? `nextToken=${encodeURIComponent(next)}` : ''].filter(Boolean).join('&');
      const page = await get(query ? `${path}${path.includes('?') ? '&' : '?'}${query}` : path);
      items.push(...(Array.isArray(page) ? page : (page?.items ?? [])));
      next = Array.isArray(page) ? undefined : page?.nextToken;
      pages += 1;
    } while (next && pages < maxPages);
    return items;
  }

  /** Runs `fn`; null when it fails with 404 (a route this API does not have yet). */
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
