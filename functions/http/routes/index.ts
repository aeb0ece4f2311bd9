import type { Route } from '#http/route.ts';
import { adminGroupRoutes } from '#http/routes/admin-group.ts';
import { siteAgentGroupRoutes } from '#http/routes/site-agent-group.ts';
import { tenantGroupRoutes } from '#http/routes/tenant-group.ts';

/**
 * Every API route: what the local runner serves, the OpenAPI document lists and CDK wires into the HTTP API. Each
 * deployed function imports only its own group's table (functions/handlers/api-*.ts), so it bundles no other route.
 */
export const routes: readonly Route[] = [...tenantGroupRoutes, ...adminGroupRoutes, ...siteAgentGroupRoutes];
