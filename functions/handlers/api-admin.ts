// First: a deployed function's process-wide settings hold before the modules below are evaluated.
import '#handlers/lambda-runtime.ts';
import { lambdaApiHandler } from '#handlers/api.ts';
import { adminGroupRoutes } from '#http/routes/admin-group.ts';

/** The AdminApi function's entry: the admin route group's routes only (lib/api-routes.ts). */
export const handler = lambdaApiHandler(adminGroupRoutes);
