import { Annotations } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import type { CalledResources } from './site-function.ts';
import type { LoadedSite } from './site.ts';

/** The Powertools metrics namespace of the functions, and their `service` dimension (see docs/deploy.md). */
export const METRICS_NAMESPACE = 'Fleetward';
export const POWERTOOLS_SERVICE = 'fleetward';

/** Lambda's limit on one function's environment (keys and values together). */
const LAMBDA_ENV_LIMIT_BYTES = 4096;

/** What contextFromEnv (functions/handlers/lambda-context.ts) reads; all of it from the site config. */
export function functionEnvironment(site: LoadedSite, resources: CalledResources): Record<string, string> {
  return checkedEnvironment(site, {
    TABLE_NAME: resources.table.tableName,
    IDEMPOTENCY_TABLE_NAME: resources.idempotencyTable.tableName,
    EVENT_BUS_NAME: resources.bus.eventBusName,
    SITE_CONFIG_JSON: JSON.stringify(site.config),
    POWERTOOLS_SERVICE_NAME: POWERTOOLS_SERVICE,
    POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
  });
}

/**
 * The environment of the functions that call the site agent: also where it is and where its signing keys are. What
 * the site file leaves out is a warning on `scope`, the stack: the functions cannot start without it.
 */
export function agentCallerEnvironment(scope: Construct, site: LoadedSite, common: Record<string, string>): Record<string, string> {
  const environment = { ...common };
  if (site.agentUrl) {
    environment.SITE_AGENT_URL = site.agentUrl;
  } else {
    Annotations.of(scope).addWarningV2(
      'fleetward:no-agent-url',
      `site ${site.name} has no [site] agent_url: the functions cannot start until one is given (set it in ${site.name}.toml or pass -c agentUrl=<url>)`,
    );
  }
  if (site.signingSecretArn) {
    environment.SITE_AGENT_SIGNING_SECRET_ARN = site.signingSecretArn;
  } else {
    Annotations.of(scope).addWarningV2(
      'fleetward:no-signing-secret',
      `site ${site.name} has no [site_agent] signing_secret_arn: the stream and sweep functions cannot call the site agent until one is given`,
    );
  }
  return checkedEnvironment(site, environment);
}

/** Lambda refuses an environment over 4 KB; tokens (table names) resolve to short strings, the config JSON can grow. */
function checkedEnvironment(site: LoadedSite, environment: Record<string, string>): Record<string, string> {
  const size = Object.entries(environment).reduce((sum, [k, v]) => sum + k.length + (v.startsWith('${Token') ? 128 : Buffer.byteLength(v)), 0);
  if (size > LAMBDA_ENV_LIMIT_BYTES) {
    const limit = LAMBDA_ENV_LIMIT_BYTES;
    throw new Error(`site ${site.name}: the functions' environment would be about ${size} bytes, over Lambda's ${limit}; shorten the site config`);
  }
  return environment;
}
