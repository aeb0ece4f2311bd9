import type { Route } from '#http/route.ts';
import { adminAuditRoutes } from '#http/routes/admin-audit.ts';
import { adminFleetRoutes } from '#http/routes/admin-fleet.ts';
import { adminCapacityHistoryRoutes } from '#http/routes/capacity-history.ts';
import { adminMetaInstanceRoutes } from '#http/routes/admin-meta-instances.ts';
import { adminOverrideRoutes } from '#http/routes/admin-overrides.ts';
import { adminSafetyRoutes } from '#http/routes/admin-safety.ts';
import { adminReservationRoutes } from '#http/routes/admin-reservations.ts';
import { adminRoutes } from '#http/routes/admin.ts';
import { adminMaintenanceRoutes } from '#http/routes/maintenance.ts';
import { retirementRoutes } from '#http/routes/retirement.ts';
import { adminValidationRoutes } from '#http/routes/validation.ts';

/** The routes the AdminApi function serves: the provider admin's (lib/api-routes.ts). */
export const adminGroupRoutes: readonly Route[] = [
  ...adminRoutes,
  ...adminFleetRoutes,
  ...adminCapacityHistoryRoutes,
  ...adminOverrideRoutes,
  ...adminSafetyRoutes,
  ...adminAuditRoutes,
  ...adminMetaInstanceRoutes,
  ...adminMaintenanceRoutes,
  ...adminValidationRoutes,
  ...retirementRoutes,
  ...adminReservationRoutes,
];
