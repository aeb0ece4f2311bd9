// Which route of a table a method and path select, as API Gateway HTTP APIs choose: the most specific route for
// the path, literal segments before `{param}` ones before `{proxy+}`. A path with no route for the method is not
// found: HTTP APIs have no 405.

export interface MatchableRoute {
  method: string;
  /** API Gateway style, e.g. `/v2/org/{org}/nico/instance/{id}`. */
  path: string;
}

interface Compiled<R> {
  route: R;
  pattern: RegExp;
  names: string[];
  /** Literal segments sort before `{param}` ones, as API Gateway prefers the most specific route. */
  rank: string;
}

function compile<R extends MatchableRoute>(route: R): Compiled<R> {
  const names: string[] = [];
  let rank = '';
  const source = route.path
    .split('/')
    .filter((segment) => segment !== '')
    .map((segment) => {
      const param = /^\{([A-Za-z0-9_]+)(\+?)\}$/.exec(segment);
      if (!param) {
        rank += '0';
        return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      }
      names.push(param[1]!);
      rank += param[2] ? '2' : '1';
      return param[2] ? '(.+)' : '([^/]+)';
    })
    .join('/');
  return { route, pattern: new RegExp(`^/${source}$`), names, rank };
}

export const normalisePath = (path: string) => (path.length > 1 ? path.replace(/\/+$/, '') : path);

const decode = (value: string) => {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
};

export interface RouteMatch<R> {
  route: R;
  /** Path parameters, decoded. */
  params: Record<string, string>;
}

export type RouteMatcher<R> = {
  /** The route `method` and `path` select, or undefined (API Gateway's 404). */
  match(method: string, path: string): RouteMatch<R> | undefined;
  /** The path parameters of a route already chosen (API Gateway's routeKey). */
  paramsOf(route: R, path: string): Record<string, string> | undefined;
};

export function createRouteMatcher<R extends MatchableRoute>(routes: readonly R[]): RouteMatcher<R> {
  // Ranks are strings of '0', '1' and '2': compared by code unit, which orders them exactly as a collator would,
  // without localeCompare's first call (it loads ICU's collation data: ~10 ms of the API's cold start).
  const compiled = routes.map(compile).sort((a, b) => (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0));
  const byRoute = new Map(compiled.map((c) => [c.route, c]));
  const paramsOf = (c: Compiled<R>, path: string) => {
    const found = c.pattern.exec(normalisePath(path));
    return found ? Object.fromEntries(c.names.map((name, i) => [name, decode(found[i + 1]!)])) : undefined;
  };
  return {
    match(method, path) {
      const upper = method.toUpperCase();
      for (const c of compiled) {
        if (c.route.method !== upper) continue;
        const params = paramsOf(c, path);
        if (params) return { route: c.route, params };
      }
      return undefined;
    },
    paramsOf: (route, path) => {
      const c = byRoute.get(route);
      return c ? paramsOf(c, path) : undefined;
    },
  };
}
