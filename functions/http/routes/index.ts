import type { AppContext } from '#services/context.ts';
import type { Route } from '../route.ts';
import { adminOverrideRoutes } from './admin-overrides.ts';
import { adminSafetyRoutes } from './admin-safety.ts';
import { adminRoutes } from './admin.ts';
import { instanceRoutes } from './instances.ts';
import { metaInstanceRoutes } from './meta-instances.ts';
import { openApiRoutes } from './openapi.ts';
import { siteAgentRoutes } from './site-agent.ts';
import { tenantMachineRoutes } from './tenant-machines.ts';

/** Every API route; the Lambda handlers and the local runner serve this same table. */
export const allRoutes = (ctx: AppContext): Route[] => [
  ...instanceRoutes(ctx),
  ...tenantMachineRoutes(ctx),
  ...metaInstanceRoutes(ctx),
  ...adminRoutes(ctx),
  ...adminOverrideRoutes(ctx),
  ...adminSafetyRoutes(ctx),
  ...siteAgentRoutes(ctx),
  ...openApiRoutes(() => allRoutes(ctx)),
];
