import type { CfnStage, HttpRoute, HttpStage, ThrottleSettings } from 'aws-cdk-lib/aws-apigatewayv2';
import { SiteConfigError, type SiteConfig } from '#config/site-config.ts';
import type { RouteGroup } from './api-routes.ts';

/** The stage's default route throttle, `[api] rate_limit` and `burst_limit`. */
export const stageThrottle = (api: SiteConfig['api']): ThrottleSettings => ({ rateLimit: api.rate_limit, burstLimit: api.burst_limit });

/**
 * `[api.routes."<METHOD> <path>"]` as the stage's route settings. A route's settings replace the stage defaults for
 * that route, and a field left out does not inherit the stage's value, so both fields are always written: what an
 * override does not name keeps the stage's value.
 */
export function applyRouteThrottles(stage: HttpStage, api: SiteConfig['api'], routes: ReadonlyMap<string, HttpRoute>): void {
  const overrides = Object.entries(api.routes);
  if (overrides.length === 0) return;
  const settings: Record<string, { ThrottlingRateLimit: number; ThrottlingBurstLimit: number }> = {};
  for (const [key, override] of overrides) {
    const route = routes.get(key);
    if (!route) throw new SiteConfigError(`api.routes."${key}": no such route`);
    settings[key] = { ThrottlingRateLimit: override.rate_limit ?? api.rate_limit, ThrottlingBurstLimit: override.burst_limit ?? api.burst_limit };
    // API Gateway refuses a stage whose route settings name a route that does not exist yet.
    stage.node.addDependency(route);
  }
  // CfnStage's routeSettings is untyped JSON keyed by route key; CloudFormation reads it in the API's own casing.
  (stage.node.defaultChild as CfnStage).routeSettings = settings;
}

/** Reserved concurrency of each API function, `[lambda] <group>_reserved_concurrency`. */
export function reservedConcurrency(lambda: SiteConfig['lambda']): Record<RouteGroup, number> {
  return {
    tenant: lambda.tenant_reserved_concurrency,
    admin: lambda.admin_reserved_concurrency,
    'site-agent': lambda.site_agent_reserved_concurrency,
  };
}
