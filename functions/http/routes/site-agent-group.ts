import type { Route } from '#http/route.ts';
import { siteAgentMaintenanceRoutes } from '#http/routes/maintenance.ts';
import { siteAgentRoutes } from '#http/routes/site-agent.ts';
import { siteAgentValidationRoutes } from '#http/routes/validation.ts';

/** The routes the SiteAgentApi function serves: the site agent's heartbeats and reports (lib/api-routes.ts). */
export const siteAgentGroupRoutes: readonly Route[] = [...siteAgentRoutes, ...siteAgentMaintenanceRoutes, ...siteAgentValidationRoutes];
