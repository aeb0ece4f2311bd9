import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  CorsHttpMethod,
  HttpApi,
  HttpMethod,
  HttpNoneAuthorizer,
  HttpStage,
  LogGroupLogDestination,
  type CorsPreflightOptions,
  type HttpRoute,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { SiteConfigError } from '#config/site-config.ts';
import { apiOpenApiDocument, apiRouteSpecs, ROUTE_GROUPS, routeKeyOf, type RouteGroup } from './api-routes.ts';
import { AWS_LIMITS, concurrencyMessage } from './aws-limits.ts';
import { applyRouteThrottles, reservedConcurrency, stageThrottle } from './edge-limits.ts';
import { handlerEntry, type FleetwardFunction } from './fleetward-function.ts';
import { API_FUNCTION_TIMEOUT_SECONDS } from './function-timeouts.ts';
import { API_FUNCTION_OF } from './lambda-functions.ts';
import { siteFunction, type CalledResources } from './site-function.ts';
import { SitePart } from './site-part.ts';
import type { LoadedSite } from './site.ts';

/** Request headers a browser client sends: the bearer token, JSON bodies, and idempotency keys of POSTs. */
const DASHBOARD_CORS_HEADERS = ['authorization', 'content-type', 'idempotency-key'];

/** Lets the dashboard's origin (and only it) call the API from the browser, with every method the API routes use. */
function dashboardCors(origin: string): CorsPreflightOptions {
  const methods = [...new Set(apiRouteSpecs().map((route) => route.method))].sort();
  return {
    allowOrigins: [origin],
    allowHeaders: DASHBOARD_CORS_HEADERS,
    allowMethods: methods.map((method) => CorsHttpMethod[method]),
    // Bearer tokens, not cookies: no credentials mode.
    allowCredentials: false,
    maxAge: Duration.hours(1),
  };
}

/** One JSON line per request: who called which route, how it went, and why it failed when API Gateway knows. */
const ACCESS_LOG_FORMAT = AccessLogFormat.custom(
  JSON.stringify({
    requestId: '$context.requestId',
    time: '$context.requestTime',
    ip: '$context.identity.sourceIp',
    routeKey: '$context.routeKey',
    status: '$context.status',
    latencyMs: '$context.responseLatency',
    sub: '$context.authorizer.claims.sub',
    org: '$context.authorizer.claims.org',
    authorizerError: '$context.authorizer.error',
    integrationError: '$context.integrationErrorMessage',
  }),
);

const routesOf: Record<RouteGroup, string> = {
  tenant: 'tenant routes (instances, machines, meta-instances)',
  admin: 'provider-admin routes',
  'site-agent': 'site agent routes (heartbeats, cleanup reports)',
};

const pascal = (name: string) =>
  name
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');

export interface SiteApiProps {
  site: LoadedSite;
  resources: CalledResources;
  /** functionEnvironment (function-environment.ts). */
  environment: Record<string, string>;
  logRetention: RetentionDays;
  /** The dashboard's origin: the one origin the API's CORS allows; no CORS without it. */
  dashboardOrigin: string | undefined;
}

/**
 * The HTTP API: every route of the route table behind the JWT authorizer (public routes without it), each wired to
 * its route group's function, on a throttled `$default` stage with access logs.
 */
export class SiteApi extends SitePart {
  readonly httpApi: HttpApi;
  readonly stage: HttpStage;
  /** One function per route group, each bundling its group's routes only (lib/api-routes.ts says why). */
  readonly functions: Record<RouteGroup, FleetwardFunction>;

  constructor(scope: Construct, id: string, props: SiteApiProps) {
    super(scope, id);
    const { site, logRetention } = props;
    const { config } = site;
    this.functions = this.routeGroupFunctions(props);

    this.httpApi = new HttpApi(this, 'Api', {
      apiName: `fleetward-${site.name}`,
      description: `Fleetward HTTP API of site ${site.name}`,
      createDefaultStage: false,
      ...(props.dashboardOrigin ? { corsPreflight: dashboardCors(props.dashboardOrigin) } : {}),
    });
    const accessLogs = new LogGroup(this, 'ApiAccessLogs', { retention: logRetention, removalPolicy: RemovalPolicy.RETAIN });
    this.stage = new HttpStage(this, 'DefaultStage', {
      httpApi: this.httpApi,
      stageName: '$default',
      autoDeploy: true,
      // The first line of defence, before any Lambda runs: a flood gets API Gateway's own 429 instead of queueing on
      // the functions' reserved concurrency. The default applies to each route, so a burst on one route does not
      // spend another's (heartbeats keep their own budget).
      throttle: stageThrottle(config.api),
      accessLogSettings: { destination: new LogGroupLogDestination(accessLogs), format: ACCESS_LOG_FORMAT },
    });

    const authorizer = new HttpJwtAuthorizer('Jwt', config.auth.issuer, {
      jwtAudience: [config.auth.audience],
      authorizerName: `fleetward-${site.name}-jwt`,
    });
    const open = new HttpNoneAuthorizer();
    const integrations = Object.fromEntries(
      ROUTE_GROUPS.map((group) => [group, new HttpLambdaIntegration(`${pascal(group)}Integration`, this.functions[group].function)]),
    ) as Record<RouteGroup, HttpLambdaIntegration>;
    const wiredRoutes = new Map<string, HttpRoute>();
    for (const route of apiRouteSpecs()) {
      const [wired] = this.httpApi.addRoutes({
        path: route.path,
        methods: [HttpMethod[route.method]],
        integration: integrations[route.group],
        authorizer: route.public ? open : authorizer,
      });
      wiredRoutes.set(routeKeyOf(route), wired!);
      if (route.public) {
        Validations.of(wired!).acknowledge({
          id: 'AwsSolutions-APIG4',
          reason:
            `${route.method} ${route.path} (${route.operationId}) is public by the route table (roles: 'public'): it serves no fleet data, ` +
            'and clients read it before they have a token.',
        });
      }
    }
    // Per-route limits where one route's cost differs from the rest (e.g. creates, which contend for machines).
    applyRouteThrottles(this.stage, config.api, wiredRoutes);
  }

  /**
   * Reserved concurrency on every API function, for two reasons. The site agent's share is a guarantee: a tenant burst
   * (or the stream and sweep functions scaling out) can never take the account's last concurrency from the heartbeats
   * that keep the fleet allocatable. The tenant and admin shares are ceilings: however hard the API is hit, each group
   * runs at most that many DynamoDB writers at once and leaves the rest of the account alone. (Lambda has no
   * per-function ceiling without a reservation.) The stage throttle turns most of a flood away before it gets here;
   * the ceilings bound whatever passes it.
   */
  private routeGroupFunctions({ site, resources, environment, logRetention }: SiteApiProps): Record<RouteGroup, FleetwardFunction> {
    const { config } = site;
    const concurrency = reservedConcurrency(config.lambda);
    const reserved = Object.values(concurrency).reduce((sum, count) => sum + count, 0);
    if (reserved + AWS_LIMITS.unreservedConcurrency > config.lambda.account_concurrency) {
      throw new SiteConfigError(`${site.file}: ${concurrencyMessage(reserved, config.lambda.account_concurrency)}`);
    }
    const openApiDocument = apiOpenApiDocument();
    const functionOf = (group: RouteGroup) =>
      siteFunction(this, API_FUNCTION_OF[group], {
        entry: handlerEntry(`api-${group}`),
        description: `Fleetward ${site.name}: HTTP API, ${routesOf[group]}`,
        environment,
        memorySize: 1024,
        timeout: Duration.seconds(API_FUNCTION_TIMEOUT_SECONDS),
        logRetention,
        reservedConcurrentExecutions: concurrency[group],
        openApiDocument,
        resources,
      });
    return Object.fromEntries(ROUTE_GROUPS.map((group) => [group, functionOf(group)])) as Record<RouteGroup, FleetwardFunction>;
  }
}
