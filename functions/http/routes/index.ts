import type { Route } from '#http/route.ts';
import { adminAuditRoutes } from '#http/routes/admin-audit.ts';
import { adminFleetRoutes } from '#http/routes/admin-fleet.ts';
import { adminOverrideRoutes } from '#http/routes/admin-overrides.ts';
import { adminSafetyRoutes } from '#http/routes/admin-safety.ts';
import { adminRoutes } from '#http/routes/admin.ts';
import { instanceRoutes } from '#http/routes/instances.ts';
import { metaInstanceRoutes } from '#http/routes/meta-instances.ts';
import { openApiRoute } from '#http/routes/openapi.ts';
import { siteAgentRoutes } from '#http/routes/site-agent.ts';
import { tenantMachineRoutes } from '#http/routes/tenant-machines.ts';
import { validationRoutes } from '#http/routes/validation.ts';
import { retirementRoutes } from '#http/routes/retirement.ts';

/**
 * Every API route: static data that the Lambda handlers and the local runner serve (with a context), and that
 * CDK and the OpenAPI generator read as it is.
 */
export const routes: readonly Route[] = [
  ...instanceRoutes,
  ...tenantMachineRoutes,
  ...metaInstanceRoutes,
  ...adminRoutes,
  ...adminFleetRoutes,
  ...adminOverrideRoutes,
  ...adminSafetyRoutes,
  ...adminAuditRoutes,
  ...validationRoutes,
  ...retirementRoutes,
  ...siteAgentRoutes,
  openApiRoute(() => routes),
];
