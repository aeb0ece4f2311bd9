import type { Route } from '../route.ts';
import { adminAuditRoutes } from './admin-audit.ts';
import { adminFleetRoutes } from './admin-fleet.ts';
import { adminOverrideRoutes } from './admin-overrides.ts';
import { adminSafetyRoutes } from './admin-safety.ts';
import { adminRoutes } from './admin.ts';
import { instanceRoutes } from './instances.ts';
import { metaInstanceRoutes } from './meta-instances.ts';
import { openApiRoute } from './openapi.ts';
import { siteAgentRoutes } from './site-agent.ts';
import { tenantMachineRoutes } from './tenant-machines.ts';

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
  ...siteAgentRoutes,
  openApiRoute(() => routes),
];
