import type { RouteGroup } from './api-routes.ts';

/**
 * The site's Lambda functions, by the construct id the stack gives each (and so its role). The local runner runs them
 * all in one process and names the one it is acting as (local/function-scope.ts), so what each calls can be checked
 * against its own role.
 */
export const FUNCTION_NAMES = ['TenantApi', 'AdminApi', 'SiteAgentApi', 'StreamHandler', 'SweepHandler'] as const;
export type FunctionName = (typeof FUNCTION_NAMES)[number];

/** The function serving each route group (lib/api-routes.ts): one per group, each with its group's entry (functions/handlers/api-<group>.ts). */
export const API_FUNCTION_OF: Record<RouteGroup, FunctionName> = { tenant: 'TenantApi', admin: 'AdminApi', 'site-agent': 'SiteAgentApi' };
