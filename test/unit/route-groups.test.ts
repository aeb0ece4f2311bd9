import { describe, expect, it } from 'vitest';
import type { Route } from '#http/route.ts';
import { adminGroupRoutes } from '#http/routes/admin-group.ts';
import { routes } from '#http/routes/index.ts';
import { siteAgentGroupRoutes } from '#http/routes/site-agent-group.ts';
import { tenantGroupRoutes } from '#http/routes/tenant-group.ts';
import { apiRouteSpecs, ROUTE_GROUPS, routeKeyOf, type RouteGroup } from '#lib/api-routes.ts';

// Each API function bundles one of these tables (functions/handlers/api-<group>.ts); the stack wires routes to the
// functions by role (routeGroupOf). A route in the wrong table would be wired to a function that answers it 404.
const tables: Record<RouteGroup, readonly Route[]> = { tenant: tenantGroupRoutes, admin: adminGroupRoutes, 'site-agent': siteAgentGroupRoutes };
const keysOf = (table: readonly Route[]) => table.map(routeKeyOf).sort();

describe('the route group tables', () => {
  it('hold exactly the routes the stack wires to their group', () => {
    for (const group of ROUTE_GROUPS) {
      const wired = apiRouteSpecs()
        .filter((route) => route.group === group)
        .map(routeKeyOf)
        .sort();
      expect(keysOf(tables[group]), group).toEqual(wired);
    }
  });

  it('make up the whole table together, each route once', () => {
    const together = ROUTE_GROUPS.flatMap((group) => keysOf(tables[group]));
    expect(together.sort()).toEqual(keysOf(routes));
    expect(new Set(together).size).toBe(routes.length);
  });
});
