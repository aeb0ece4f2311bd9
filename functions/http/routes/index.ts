import type { AppContext } from '#services/context.ts';
import type { Route } from '../route.ts';
import { adminRoutes } from './admin.ts';
import { instanceRoutes } from './instances.ts';
import { siteAgentRoutes } from './site-agent.ts';

/** Every API route; the Lambda handlers and the local runner serve this same table. */
export const allRoutes = (ctx: AppContext): Route[] => [...instanceRoutes(ctx), ...adminRoutes(ctx), ...siteAgentRoutes(ctx)];
