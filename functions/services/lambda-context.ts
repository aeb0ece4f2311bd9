import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { randomUUID } from 'node:crypto';
import { parseSiteConfig, siteConfigSchema, type SiteConfig } from '#config/site-config.ts';
import { systemClock, type IdSource } from '#domain/model.ts';
import { createDocumentClient, tableNamesFromEnv } from '#store/client.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import type { IdempotencyPersistence } from '#handlers/api.ts';
import { httpSiteAgent } from '#site/site-agent.ts';
import type { AppContext, Log } from './context.ts';
import { eventBridgePublisher } from './events.ts';

export const randomIds: IdSource = { next: (prefix) => `${prefix}-${randomUUID().replaceAll('-', '').slice(0, 16)}` };

export function powertoolsLog(logger: Logger): Log {
  return {
    info: (message, fields) => logger.info(message, fields ?? {}),
    warn: (message, fields) => logger.warn(message, fields ?? {}),
    error: (message, fields) => logger.error(message, fields ?? {}),
  };
}

/** Flushed by the sweep handler after each run (see handlers/sweep.ts). */
export const sharedMetrics = new Metrics({ namespace: 'Fleetward', serviceName: 'fleetward' });

/** The site config a deployed function runs with: the stack passes the parsed TOML as JSON. */
function configFromEnv(env: NodeJS.ProcessEnv): SiteConfig {
  if (env.SITE_CONFIG_JSON) return siteConfigSchema.parse(JSON.parse(env.SITE_CONFIG_JSON));
  if (env.SITE_CONFIG_TOML) return parseSiteConfig(env.SITE_CONFIG_TOML, 'SITE_CONFIG_TOML');
  throw new Error('SITE_CONFIG_JSON must be set');
}

/** The context of a deployed Lambda, from its environment; built once per cold start. */
export function contextFromEnv(env: NodeJS.ProcessEnv = process.env): AppContext & { idempotency: IdempotencyPersistence } {
  const config = configFromEnv(env);
  // Two sites in one account must not share the RepairsStuck alarm.
  sharedMetrics.setDefaultDimensions({ site: config.site.name });
  const names = tableNamesFromEnv(env);
  const client = createDocumentClient(env.AWS_ENDPOINT_URL_DYNAMODB);
  const agentUrl = env.SITE_AGENT_URL ?? config.site.agent_url;
  if (!agentUrl) throw new Error('SITE_AGENT_URL (or [site] agent_url) must be set');
  const log = powertoolsLog(new Logger({ serviceName: 'fleetward' }));
  const metrics = sharedMetrics;
  if (!env.EVENT_BUS_NAME) throw new Error('EVENT_BUS_NAME must be set');
  return {
    store: new DynamoFleetStore(client, names.table),
    config,
    clock: systemClock,
    ids: randomIds,
    agent: httpSiteAgent(agentUrl, config),
    events: eventBridgePublisher(env.EVENT_BUS_NAME),
    metrics: { gauge: (name, value) => metrics.addMetric(name, MetricUnit.Count, value) },
    log,
    // Idempotency records are written through the same client: one connection pool per cold start.
    idempotency: { client, tableName: names.idempotencyTable },
  };
}

/** Build a handler on first use, so importing a handler module has no side effects (tests, local runner). */
export function lazy<A extends unknown[], R>(build: () => (...args: A) => R): (...args: A) => R {
  let built: ((...args: A) => R) | undefined;
  return (...args: A) => (built ??= build())(...args);
}
