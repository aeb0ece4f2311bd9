import type { Route } from '#http/route.ts';
import { instanceRoutes } from '#http/routes/instances.ts';
import { breakFixRoutes } from '#http/routes/break-fix.ts';
import { tenantMaintenanceRoutes } from '#http/routes/maintenance.ts';
import { tenantCapacityRoutes } from '#http/routes/tenant-capacity.ts';
import { tenantCapacityHistoryRoutes } from '#http/routes/capacity-history.ts';
import { metaInstanceRoutes } from '#http/routes/meta-instances.ts';
import { openApiRoute } from '#http/routes/openapi.ts';
import { tenantMachineRoutes } from '#http/routes/tenant-machines.ts';

/** The routes the TenantApi function serves: a tenant's own, and the public document (lib/api-routes.ts). */
export const tenantGroupRoutes: readonly Route[] = [
  ...instanceRoutes,
  ...tenantMachineRoutes,
  ...metaInstanceRoutes,
  ...tenantCapacityRoutes,
  ...tenantCapacityHistoryRoutes,
  ...tenantMaintenanceRoutes,
  ...breakFixRoutes,
  openApiRoute,
];
