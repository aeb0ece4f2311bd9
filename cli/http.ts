import { version } from '#http/version.ts';
import type { Connection } from './config.ts';
import { ApiError, CliError, type ProblemDocument } from './errors.ts';

// The CLI's only way to the API: JSON over fetch, problems turned into ApiError.

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOptions {
  body?: unknown;
  query?: Query;
  /** Routes of the local runner that take no token (`/_local/token`). */
  anonymous?: boolean;
}

export const noToken = 'no token: give --token, set FLEETWARD_TOKEN or add one to a profile (fleetward profile set)';

export interface Client {
  readonly url: string;
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<T>;
  /** Follows `nextToken` until the list ends or `max` items were read. */
  list<T = any>(path: string, query?: Query, max?: number): Promise<T[]>;
}

/** Encodes each value as one path segment: `path\`/admin/machines/${id}\``. */
export const path = (strings: TemplateStringsArray, ...values: string[]): string =>
  strings.reduce((out, s, i) => out + s + (i < values.length ? encodeURIComponent(values[i]!) : ''), '');

function queryString(query: Query | undefined): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) params.set(name, String(value));
  const text = params.toString();
  return text ? `?${text}` : '';
}

async function problemOf(response: Response): Promise<ProblemDocument> {
  const text = await response.text();
  try {
    const body = JSON.parse(text) as Partial<ProblemDocument> & { message?: string };
    // API Gateway's own refusals (e.g. its JWT authorizer) answer `{ "message": "Unauthorized" }`.
    return { ...body, status: response.status, detail: body.detail ?? body.message ?? response.statusText };
  } catch {
    return { status: response.status, detail: text.trim() || response.statusText };
  }
}

export function createClient(connection: Connection, fetchImpl: typeof fetch = fetch): Client {
  const request = async <T>(method: string, path: string, options: RequestOptions = {}): Promise<T> => {
    const headers: Record<string, string> = { accept: 'application/json, application/problem+json', 'user-agent': `fleetward-cli/${version}` };
    if (!options.anonymous) {
      if (!connection.token) throw new CliError(noToken, 2);
      headers.authorization = `Bearer ${connection.token}`;
    }
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const target = `${connection.url}${path}${queryString(options.query)}`;
    let response: Response;
    try {
      response = await fetchImpl(target, {
        method,
        headers,
        ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new CliError(`cannot reach ${connection.url} (${cause?.code ?? cause?.message ?? (error as Error).message})`);
    }
    if (!response.ok) throw new ApiError(await problemOf(response));
    if (response.status === 204) return undefined as T;
    const text = await response.text();
    return (text ? JSON.parse(text) : undefined) as T;
  };

  return {
    url: connection.url,
    request,
    async list<T>(path: string, query: Query = {}, max = Infinity) {
      const items: T[] = [];
      let nextToken: string | undefined;
      do {
        const limit = Math.min(500, max - items.length);
        const page = await request<{ items: T[]; nextToken?: string }>('GET', path, { query: { ...query, limit, nextToken } });
        items.push(...page.items);
        nextToken = page.nextToken;
      } while (nextToken && items.length < max);
      return items;
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
    const roles = Array.isArray(raw) ? raw.map(String) : typeof raw === 'string' ? raw.replace(/^\[|\]$/g, '').split(/[\s,]+/).filter(Boolean) : [];
    return {
      ...(typeof claims.sub === 'string' ? { sub: claims.sub } : {}),
      ...(typeof claims.org === 'string' ? { org: claims.org } : {}),
      roles,
    };
  } catch {
    return undefined;
  }
}
