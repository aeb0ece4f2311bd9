// First: a deployed function's process-wide settings hold before the modules below are evaluated.
import '#handlers/lambda-runtime.ts';
import { lambdaApiHandler } from '#handlers/api.ts';
import { siteAgentGroupRoutes } from '#http/routes/site-agent-group.ts';

/** The SiteAgentApi function's entry: the site-agent route group's routes only (lib/api-routes.ts). */
export const handler = lambdaApiHandler(siteAgentGroupRoutes);
