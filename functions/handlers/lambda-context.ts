import { Metrics as PowertoolsMetrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';
import { dueTimes } from '#reconcilers/due-times.ts';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import { METRICS_KEY } from '@aws-lambda-powertools/commons';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy, { type MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import type { SiteConfig } from '#config/site-config.ts';
import { systemClock, type IdSource } from '#domain/core/model.ts';
import { createDocumentClient, tableNamesFromEnv } from '#store/client.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import type { IdempotencyPersistence } from '#handlers/api.ts';
import type { AppContext, Metrics, SiteAgent } from '#runtime/context.ts';
import type { EventPublisher } from '#runtime/events.ts';
import { createLogger, powertoolsLog } from '#runtime/logging.ts';
import type { Dimensions, MetricName } from '#runtime/metric-catalog.ts';

export const randomIds: IdSource = { next: (prefix) => `${prefix}-${randomUUID().replaceAll('-', '').slice(0, 16)}` };

// One of each per cold start, shared by the handler's Powertools middlewares (handlers/*.ts) and its context.
/** Flushed after every invocation by the handlers' `flushMetrics` middleware. */
export const sharedMetrics = new PowertoolsMetrics({ namespace: 'Fleetward', serviceName: 'fleetward' });
export const sharedLogger = createLogger({ logLevel: process.env.LOG_LEVEL });
export const sharedTracer = new Tracer({ serviceName: 'fleetward' });

/**
 * Fleetward's figures as CloudWatch metrics (EMF). A figure with dimensions of its own (a machine type, an outcome)
 * goes out as a single metric at once: its dimension set differs from the invocation's shared one.
 */
export function powertoolsMetrics(metrics: PowertoolsMetrics): Metrics {
  const put = (name: MetricName, unit: (typeof MetricUnit)[keyof typeof MetricUnit], value: number, dimensions?: Dimensions) => {
    if (!dimensions) return metrics.addMetric(name, unit, value);
    const single = metrics.singleMetric();
    single.addDimensions(dimensions);
    single.addMetric(name, unit, value);
  };
  return {
    gauge: (name, value, dimensions) => put(name, name.endsWith('Seconds') ? MetricUnit.Seconds : MetricUnit.Count, value, dimensions),
    count: (name, value, dimensions) => put(name, MetricUnit.Count, value, dimensions),
    timing: (name, ms, dimensions) => put(name, MetricUnit.Milliseconds, ms, dimensions),
  };
}

/**
 * The site config a deployed function runs with: the stack passes the TOML as JSON (docs/deploy.md), after parsing
 * and validating it at synth with the schema of the very code it deploys (every default filled in), so the
 * function takes it as it is. Validating it again would build the whole config schema at every cold start (about
 * 7 ms with the parse); reading TOML here would put a TOML parser in every bundle.
 */
function configFromEnv(env: NodeJS.ProcessEnv): SiteConfig {
  if (env.SITE_CONFIG_JSON) return JSON.parse(env.SITE_CONFIG_JSON) as SiteConfig;
  throw new Error('SITE_CONFIG_JSON must be set');
}

/**
 * Where a function's repair events go. Only the stream and the sweep publish them (the outbox, runtime/events.ts, and
 * the sweep's fallback for it), so only their entry points pass an EventBridge publisher: the API bundles then carry
 * no EventBridge client, and their roles may not put repair events on the bus anyway.
 */
export interface LambdaContextOptions {
  events?: (busName: string) => EventPublisher;
  /**
   * The site agent, for the functions that call it (the stream and the sweep run the reconcilers' agent calls): only
   * their bundles then carry the agent client and the Secrets Manager client its signing keys come from, and only
   * their roles may read those keys. The API never calls the agent.
   */
  agent?: (env: NodeJS.ProcessEnv, config: SiteConfig) => SiteAgent;
}

const noEvents: EventPublisher = {
  publish: (event) => Promise.reject(new Error(`${event.type}: this function publishes no repair events (the stream and the sweep do)`)),
};

const notHere = (call: string) => Promise.reject(new Error(`site agent ${call}: this function does not call the site agent (the stream and sweep do)`));
const noAgent: SiteAgent = {
  create: () => notHere('create'),
  delete: () => notHere('delete'),
  status: () => notHere('status'),
  startMaintenance: () => notHere('maintenance start'),
  validate: () => notHere('validate'),
  power: () => notHere('power'),
};

/** The context of a deployed Lambda, from its environment; built once per cold start. */
export function contextFromEnv(env: NodeJS.ProcessEnv = process.env, options: LambdaContextOptions = {}): AppContext & { idempotency: IdempotencyPersistence } {
  const config = configFromEnv(env);
  // Two sites in one account must not share the alarms.
  sharedMetrics.setDefaultDimensions({ site: config.site.name });
  const names = tableNamesFromEnv(env);
  const client = sharedTracer.captureAWSv3Client(createDocumentClient(env.AWS_ENDPOINT_URL_DYNAMODB));
  if (!env.EVENT_BUS_NAME) throw new Error('EVENT_BUS_NAME must be set');
  return {
    store: new DynamoFleetStore(client, names.table, dueTimes),
    config,
    clock: systemClock,
    ids: randomIds,
    agent: options.agent ? options.agent(env, config) : noAgent,
    events: options.events ? options.events(env.EVENT_BUS_NAME) : noEvents,
    metrics: powertoolsMetrics(sharedMetrics),
    log: powertoolsLog(sharedLogger),
    // Idempotency records are written through the same client: one connection pool per cold start.
    idempotency: { client, tableName: names.idempotencyTable },
  };
}

export interface TracingLogsAndMetricsOptions<E> {
  /**
   * The invocation's correlation id, taken from its event. A function rather than Powertools' JMESPath
   * `correlationIdPath`: the JMESPath engine would be in every bundle, built at every cold start, for one field.
   */
  correlationIdOf?: (event: E) => string | undefined;
}

/**
 * A Lambda entry point with the Powertools middlewares: an X-Ray segment around it, the invocation's context (and
 * correlation id, when `correlationIdOf` finds one) on every log line, metrics flushed at its end.
 */
export function withTracingLogsAndMetrics<E, R>(
  handler: (event: E, context: Context) => Promise<R>,
  { correlationIdOf }: TracingLogsAndMetricsOptions<E> = {},
) {
  const correlated = (event: E, context: Context): Promise<R> => {
    const id = correlationIdOf?.(event);
    // A temporary key: the logger's `resetKeys` clears it when the invocation ends.
    if (id) sharedLogger.setCorrelationId(id);
    return handler(event, context);
  };
  return middy(correlated)
    .use(captureLambdaHandler(sharedTracer))
    .use(injectLambdaContext(sharedLogger, { resetKeys: true }))
    .use(flushMetrics(sharedMetrics));
}

/**
 * Powertools' `logMetrics` middleware with the cold start metric, less its warning for an invocation that recorded
 * no metric ("No application metrics to publish", which `publishStoredMetrics` prints whenever its buffer is empty):
 * most API requests record none, and a warning per request would bury the ones that mean something. Only what was
 * recorded is flushed; what the invocation added to its dimensions and metadata is cleared either way.
 */
function flushMetrics(metrics: PowertoolsMetrics): MiddlewareObj {
  const flush = () => {
    if (metrics.hasStoredMetrics()) return void metrics.publishStoredMetrics();
    metrics.clearDimensions();
    metrics.clearMetadata();
  };
  return {
    before: (request) => {
      metrics.captureColdStartMetric(request.context.functionName);
      // Where Powertools' own middlewares find it, so a middleware that returns early still flushes.
      request.internal = { ...request.internal, [METRICS_KEY]: flush };
    },
    after: flush,
    onError: flush,
  };
}

/** Build a handler on first use, so importing a handler module has no side effects (tests, local runner). */
export function buildOnFirstCall<A extends unknown[], R>(build: () => (...args: A) => R): (...args: A) => R {
  let built: ((...args: A) => R) | undefined;
  return (...args: A) => (built ??= build())(...args);
}
