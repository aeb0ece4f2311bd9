import { openApiDocument, type OpenApiDocument } from '#http/openapi.ts';
import type { HttpMethod, Route } from '#http/route.ts';
import { routes } from '#http/routes/index.ts';
import type { Role } from '#domain/core/model.ts';

/**
 * Route groups, one Lambda function each, all running the same api handler module, each given its group's routes
 * alone (functions/handlers/api-<group>.ts), so that no bundle carries another group's code. Why split at all:
 * each group scales, warms and fails on its own. The site agent's heartbeats are steady, frequent traffic that
 * keeps its function warm and must not queue behind tenant bursts; tenant calls
 * are latency-sensitive and bursty; provider-admin calls are rare and would otherwise pay cold starts inside
 * the tenant function's pool or force it to scale. Why not one function per route: thirty functions would each
 * be cold most of the time, which is worse for cold starts, not better.
 */
export const ROUTE_GROUPS = ['tenant', 'admin', 'site-agent'] as const;
export type RouteGroup = (typeof ROUTE_GROUPS)[number];

const groupOfRole: Record<Role, RouteGroup> = { tenant: 'tenant', 'provider-admin': 'admin', 'site-agent': 'site-agent' };

export interface ApiRouteSpec {
  operationId: string;
  method: HttpMethod;
  path: string;
  group: RouteGroup;
  /** Public routes take no token; every other route sits behind the JWT authorizer. */
  public: boolean;
}

/** The document `GET /openapi.json` serves, generated at synth from the same table (see fleetward-function.ts). */
export const apiOpenApiDocument = (): OpenApiDocument => openApiDocument(routes);

/** Each route's method, path, group and access: what the stack wires into the HTTP API; static data, read as it is. */
export function apiRouteSpecs(): ApiRouteSpec[] {
  return routes.map((route) => ({
    operationId: route.operationId,
    method: route.method,
    path: route.path,
    group: routeGroupOf(route),
    public: route.roles === 'public',
  }));
}

/** The group (and so the function) serving a route: public routes go with the tenant group. */
export function routeGroupOf(route: Pick<Route, 'roles'>): RouteGroup {
  // A route open to several roles goes with the first one listed: the caller it is mainly for.
  const firstRole: Role | undefined = route.roles === 'public' ? undefined : (route.roles as Role[])[0];
  return firstRole ? groupOfRole[firstRole] : 'tenant';
}

/** API Gateway's name for a route, `<METHOD> <path>`: what stage route settings and `[api.routes]` are keyed by. */
export const routeKeyOf = (route: Pick<ApiRouteSpec, 'method' | 'path'>) => `${route.method} ${route.path}`;
