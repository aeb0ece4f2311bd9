// First: a deployed function's process-wide settings hold before the modules below are evaluated.
import '#handlers/lambda-runtime.ts';
import { lambdaApiHandler } from '#handlers/api.ts';
import { tenantGroupRoutes } from '#http/routes/tenant-group.ts';

/** The TenantApi function's entry: the tenant route group's routes only (lib/api-routes.ts). */
export const handler = lambdaApiHandler(tenantGroupRoutes);
