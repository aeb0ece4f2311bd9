import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { dueTimes } from '#reconcilers/due-times.ts';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { SiteConfig } from '#config/site-config.ts';
import { systemClock, type Clock, type IdSource } from '#domain/core/model.ts';
import { createHttpApi } from '#handlers/api.ts';
import { createStreamHandler } from '#handlers/stream.ts';
import { followUpEvent, SWEEP_FOLLOW_UP } from '#reconcilers/sweep-follow-up.ts';
import type { SweepPosition, SweepResult } from '#reconcilers/sweep.ts';
import { routes } from '#http/routes/index.ts';
import { createLocalTokenIssuer, type LocalTokenIssuer } from '#http/tokens.ts';
import type { AppContext } from '#runtime/context.ts';
import { createLogger, powertoolsLog } from '#runtime/logging.ts';
import { prometheusMetrics } from '#runtime/prometheus-metrics.ts';
import { randomIds } from '#handlers/lambda-context.ts';
import { eventBridgePublisher, EVENT_SOURCE, inProcessBus } from '#runtime/events.ts';
import { registerMachines } from '#services/machines.ts';
import { createDocumentClient, type TableNames } from '#store/client.ts';
import { randomFor, type AwsSemanticsConfig } from '#local/aws-semantics/config.ts';
import { injectThrottles } from '#local/aws-semantics/throttle.ts';
import { injectIndexLag } from '#local/aws-semantics/index-lag.ts';
import { overlappingInvocations } from '#local/aws-semantics/overlapping-sweeps.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { TableMigrations } from '#store/migrations/runner.ts';
import type { SigningKey } from '#site/request-signing.ts';
import { httpSiteAgent } from '#runtime/site-agent.ts';
import { staticKeys } from '#site/signing-keys.ts';
import { createLocalHttpServer, gatewayRoutesOf } from './api-gateway-adapter.ts';
import { createAwsCallRecorder } from './aws-call-recorder.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from './dynamodb-local.ts';
import { runAsFunction } from './function-scope.ts';
import { answersWithin, assessHealth, type Health } from './health.ts';
import { localEventBridge } from './local-event-bridge.ts';
import { textLines, type LogSink } from './log-sink.ts';
import { countersOf, type RunnerCounters } from './runner-counters.ts';
import { runnerRoutes } from './runner-routes.ts';
import { createScheduleTimer } from './schedule-timer.ts';
import { demoFleet } from './site-agent/demo-fleet.ts';
import { createSiteSimulator, type SiteSimulator } from './site-agent/simulator.ts';
import { prepareReferenceAgent, withoutSimulatorControls } from './reference-agent.ts';
import type { StreamChaosConfig } from './stream-chaos.ts';
import { pollerSettingsOf } from '#local/aws-semantics/parallel-shards.ts';
import { siteFunctions } from '#local/aws-semantics/site-functions.ts';
import { createSweepHandler, eventBridgeHandOff, sweepMarginMs } from '#handlers/sweep.ts';
import { invokeFunction } from './lambda-invocation.ts';
import { HTTP_API_PAYLOAD_BYTES } from '#lib/aws-limits.ts';
import { auditedStreamFilter, type FilterDisagreement } from './stream-filter-audit.ts';
import { watchServerErrors, type ServerErrorAnswer } from './server-errors.ts';
import { createStreamPoller, type StreamPollerOptions } from './stream-poller.ts';
import { createTables } from './tables.ts';
import { declareDeployed, sayDataVersion } from './table-upgrade.ts';

export interface LocalSiteOptions {
  config: SiteConfig;
  /** 0 picks a free port. */
  port: number;
  /** Keep DynamoDB Local's data in this folder; in memory when absent. */
  persistDir?: string;
  /** Use an already running DynamoDB Local (tests share one per run) instead of starting one. */
  dynamoEndpoint?: string;
  tableNames?: TableNames;
  /** How often the schedule timer runs the sweep; by default `[sweep] interval_seconds`. */
  sweepIntervalMs?: number;
  clock?: Clock;
  ids?: IdSource;
  /**
   * Which site agent serves the demo fleet: the simulator (the default), or the reference agent (agent/) with an
   * ipmi_sim BMC per machine (FLEETWARD_AGENT=reference, local/reference-agent.ts).
   */
  agent?: 'simulator' | 'reference';
  /** Register the simulator's demo fleet at start. Default true. */
  registerFleet?: boolean;
  /** Called with the store's DynamoDB client before its first request (the bench's meters). */
  onStoreClient?: (client: DynamoDBDocumentClient) => void;
  /**
   * Run the stream poller (the stream reactions). Default true. False leaves the sweep as the only reconciler, as if
   * the stream handler did nothing (the bench's sweep-alone comparison); `streamIdle` then resolves at once.
   */
  streamPoller?: boolean;
  /** How long the poller or the timer may go without progress before /health calls it stalled. Default 30 s. */
  healthStallAfterMs?: number;
  /**
   * Serve every API request as a Lambda container of its own would: nothing a process keeps between requests (the
   * site view, the claims in flight, both kept by the config object) is shared. Default false: one process serves
   * them all, as the local site does. The bench measures creates under contention both ways.
   */
  containerPerRequest?: boolean;
  /** FLEETWARD_STREAM_CHAOS: the poller misdelivers on purpose (see stream-chaos.ts). */
  streamChaos?: StreamChaosConfig;
  /** FLEETWARD_AWS_SEMANTICS: what AWS does that DynamoDB Local does not (aws-semantics/config.ts). Off when absent. */
  awsSemantics?: AwsSemanticsConfig;
  /**
   * What the poller calls instead of the stream handler, for a test that makes the stream behave as AWS's can at a
   * moment it chooses: batches held back (a slow or throttled function), or records never handled (older than
   * `maxRecordAge`). Absent: the stream handler itself.
   */
  aroundStreamHandler?: (handler: StreamPollerOptions['handler']) => StreamPollerOptions['handler'];
  /** Where the log goes; every line as text on stdout when absent (log-sink.ts). */
  log?: LogSink;
  /** The controller's JSON log lines from this level up (debug, info, warn, error); LOG_LEVEL or info by default. */
  logLevel?: string;
  /**
   * Record every AWS call the site's functions make into this directory (FLEETWARD_AWS_CALL_LOG), for the IAM test
   * (local/aws-call-recorder.ts). Nothing is recorded, and no recording middleware installed, without it.
   */
  awsCallLogDir?: string;
  /**
   * Declare this start a finished deploy: a table an earlier release wrote leaves that release's layout and its
   * migrations start (POST /admin/migrations/start). Default true; false keeps it pinned, as a deploy in progress
   * (FLEETWARD_HOLD_MIGRATIONS=1), for running beside the release before.
   */
  startMigrations?: boolean;
}

export interface LocalSite {
  url: string;
  /** The in-process event bus standing in for EventBridge: what repair automation would have been told. */
  events: ReturnType<typeof inProcessBus>;
  ctx: AppContext;
  issuer: LocalTokenIssuer;
  simulator: SiteSimulator;
  /** The site's DynamoDB tables (tests dump them to check that a request changed nothing). */
  tableNames: TableNames;
  /** The client the site's store sends through (idempotency records have their own): tests scan with it, the bench meters it. */
  storeClient: DynamoDBDocumentClient;
  /** Records on which the stack's stream filters and the stream handler disagreed (tests expect none). */
  streamFilterDisagreements(): FilterDisagreement[];
  /** Every 5xx the site answered so far (tests allow none but 503 with Retry-After). */
  serverErrors(): ServerErrorAnswer[];
  /** Resolves when what was written so far has been through the stream handler (tests). */
  streamIdle(timeoutMs?: number): Promise<void>;
  /** What the site has done so far: sweeps, stream batches, API requests, the agent's calls (also on GET /health). */
  counters(): RunnerCounters;
  health(): Promise<Health>;
  stop(): Promise<void>;
}

/** The API function, counting the invocations that answered by route key. */
function countingRequests<E extends { routeKey: string }, C, R>(counts: Map<string, number>, handler: (event: E, context: C) => Promise<R>) {
  return async (event: E, context: C): Promise<R> => {
    try {
      return await handler(event, context);
    } finally {
      counts.set(event.routeKey, (counts.get(event.routeKey) ?? 0) + 1);
    }
  };
}

/** How many sweep intervals one hold of the sweep's lease lasts locally, before its run renews it. */
const SWEEP_LEASE_HOLD_INTERVALS = 3;

/**
 * The whole site in one process: DynamoDB Local, the real handler modules behind an API Gateway v2 adapter, the
 * stream poller, the schedule timer and the simulated site agent with its demo fleet.
 */
export async function startLocalSite(options: LocalSiteOptions): Promise<LocalSite> {
  const sink = options.log ?? textLines((line) => console.log(line));
  const { config } = options;
  const stops: Array<() => Promise<void>> = [];
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop().catch((error) => sink.part('runner', `error while stopping: ${String(error)}`));
    stops.length = 0;
  };
  try {
    let dynamo: DynamoDbLocal | undefined;
    if (!options.dynamoEndpoint) {
      dynamo = await startDynamoDbLocal(options.persistDir ? { persistDir: options.persistDir } : {});
      stops.push(() => dynamo!.stop());
      sink.part('dynamodb', `DynamoDB Local on ${dynamo.endpoint} (${options.persistDir ? `data in ${options.persistDir}` : 'in memory'})`);
    }
    const endpoint = options.dynamoEndpoint ?? dynamo!.endpoint;
    const names = options.tableNames ?? { table: `fleetward-${config.site.name}`, idempotencyTable: `fleetward-${config.site.name}-idempotency` };
    const tables = await createTables(endpoint, names, (line) => sink.part('dynamodb', line));

    const issuer = createLocalTokenIssuer({ issuer: config.auth.issuer, audience: config.auth.audience });
    let apiUrl = '';
    let serverErrors: () => ServerErrorAnswer[] = () => [];
    // The key of this run, held by both sides as a deployed site's controller and agent hold theirs.
    const signingKey: SigningKey = { id: `local-${randomBytes(4).toString('hex')}`, secret: randomBytes(32).toString('hex') };
    const simulator = createSiteSimulator({
      machines: demoFleet(config.simulator.machines),
      controllerUrl: () => apiUrl,
      token: () => issuer.mint({ sub: 'site-agent', org: 'site', roles: ['site-agent'] }),
      signingKeys: [signingKey],
      heartbeatIntervalMs: config.simulator.heartbeat_interval_seconds * 1000,
      heartbeatParts: config.simulator.heartbeat_parts,
      provisionMs: config.simulator.provision_ms,
      cleanupMs: config.simulator.cleanup_ms,
      maintenanceMs: config.simulator.maintenance_ms,
      validationMs: config.simulator.validation_ms,
      ...(options.persistDir ? { stateFile: join(options.persistDir, 'site-agent.json') } : {}),
      log: (line) => sink.part('simulator', line),
    });
    // Listening before either side starts: the controller knows the agent's URL, and no other process can take its port.
    // With the reference agent the simulator only keeps its (idle) counters: it takes no port.
    if (options.agent !== 'reference') await simulator.listen();
    // Closes it if the site fails before starting it; once started, it is stopped first (below), and this does nothing.
    stops.push(() => simulator.stop());
    const reference =
      options.agent === 'reference'
        ? await prepareReferenceAgent({
            machines: demoFleet(config.simulator.machines),
            signingKey,
            heartbeatIntervalSeconds: config.simulator.heartbeat_interval_seconds,
            heartbeatParts: config.simulator.heartbeat_parts,
            ...(options.persistDir ? { dataDir: options.persistDir } : {}),
            log: (line) => sink.part('agent', line),
          })
        : undefined;
    if (reference) stops.push(() => reference.stop());

    const busName = `fleetward-${config.site.name}`;
    const recorder = options.awsCallLogDir
      ? createAwsCallRecorder(options.awsCallLogDir, { tables: { [names.table]: 'main', [names.idempotencyTable]: 'idempotency' }, eventBusName: busName })
      : undefined;
    const storeClient = createDocumentClient(endpoint);
    recorder?.instrument(storeClient, 'dynamodb');
    options.onStoreClient?.(storeClient);
    if (options.awsSemantics?.modes.includes('throttle')) {
      injectThrottles(storeClient, { share: options.awsSemantics.throttleShare, random: randomFor(options.awsSemantics, 'throttle') });
    }
    // Inside the throttles: the images are kept of what reached the table.
    if (options.awsSemantics?.modes.includes('index-lag')) {
      injectIndexLag(storeClient, { lagMs: options.awsSemantics.indexLagMs, images: createDocumentClient(endpoint) });
    }
    const store = new DynamoFleetStore(storeClient, names.table, dueTimes);
    if (!tables.created) await sayDataVersion(store, (line) => sink.part('runner', line));
    // The same Powertools JSON lines as in Lambda, handed to the sink, which shows them as it is told.
    const logger = createLogger({ logLevel: options.logLevel ?? process.env.LOG_LEVEL, write: sink.controller });
    const log = powertoolsLog(logger);
    const events = inProcessBus(log);
    // The site's bus with the stack's two rules: repair events to repair automation (here the in-process bus), and a
    // sweep's follow-up to the next sweep run, which the timer starts at once.
    let followUp: SweepPosition | undefined;
    const eventBridge = localEventBridge(busName, [
      { matches: (entry) => entry.Source === EVENT_SOURCE, deliver: (entry) => events.publish({ type: entry.DetailType!, detail: JSON.parse(entry.Detail!) }) },
      {
        matches: (entry) => entry.Source === SWEEP_FOLLOW_UP.source && entry.DetailType === SWEEP_FOLLOW_UP.detailType,
        deliver: (entry) => void (followUp = JSON.parse(entry.Detail!) as SweepPosition),
      },
    ]);
    recorder?.instrument(eventBridge, 'eventbridge');
    // What CloudWatch would get in AWS: scraped on GET /metrics, the site-wide gauges also shown on /health.
    const metrics = prometheusMetrics();
    const ctx: AppContext = {
      store,
      config,
      clock: options.clock ?? systemClock,
      ids: options.ids ?? randomIds,
      agent: httpSiteAgent(reference?.url ?? simulator.url, config, staticKeys({ keys: [signingKey], current: signingKey.id })),
      events: eventBridgePublisher(busName, eventBridge),
      metrics,
      log,
    };

    const { limitsOf, streamMapping: mapping } = await siteFunctions(config, options.awsSemantics, (line) => sink.part('runner', line));
    const streamFilter = auditedStreamFilter(mapping.filterPatterns);
    const streamHandler = createStreamHandler(ctx);
    const streamLimits = limitsOf('StreamHandler');
    const invokeStreamHandler: StreamPollerOptions['handler'] = (event) => invokeFunction(streamLimits, (context) => streamHandler(event, context));
    const poller =
      options.streamPoller === false
        ? null
        : createStreamPoller({
            endpoint,
            tableName: names.table,
            handler: options.aroundStreamHandler ? options.aroundStreamHandler(invokeStreamHandler) : invokeStreamHandler,
            filter: streamFilter.filter,
            ...pollerSettingsOf(mapping, { parallelShards: options.awsSemantics?.modes.includes('parallel-shards') ?? false }),
            ...(options.streamChaos ? { chaos: options.streamChaos } : {}),
            ...(recorder ? { onStreamsClient: (client) => recorder.instrument(client, 'dynamodb-streams') } : {}),
            log: (line) => sink.part('stream', line),
          });
    // A sweep that runs out of its interval hands the rest to a follow-up through the bus, which the timer runs at once.
    const migrations = new TableMigrations({ client: storeClient, table: names.table, store, due: dueTimes });
    const sweep = createSweepHandler(ctx, eventBridgeHandOff(busName, eventBridge), migrations);
    const sweepIntervalMs = options.sweepIntervalMs ?? config.sweep.interval_seconds * 1000;
    const sweepLimits = limitsOf('SweepHandler');
    const sweepMargin = sweepMarginMs(config);
    let latestSweptRun = 0;
    const timer = createScheduleTimer({
      intervalMs: sweepIntervalMs,
      tick: async (run) => {
        let result: SweepResult | undefined;
        try {
          result = await runAsFunction('SweepHandler', () =>
            invokeFunction(sweepLimits, (context) => {
              const startedAt = Date.now();
              const event = followUp ? followUpEvent(followUp) : {};
              followUp = undefined;
              // As in AWS (handlers/sweep.ts), and within the interval, so the local timer's next run finds it done. Its
              // lease is held a few intervals at a time, renewed while the run lasts: after a crash, the sweeps of the
              // restarted site wait that long for the dead run's lease, not the function's whole timeout.
              const timeLeftMs = () => Math.min(sweepIntervalMs - (Date.now() - startedAt), context.getRemainingTimeInMillis() - sweepMargin);
              const lifeMs = context.getRemainingTimeInMillis();
              return sweep(event, timeLeftMs, { holdMs: Math.min(SWEEP_LEASE_HOLD_INTERVALS * sweepIntervalMs, lifeMs), lifeMs });
            }),
          );
        } finally {
          if (!result?.skipped) latestSweptRun = Math.max(latestSweptRun, run);
        }
      },
      runAgainAtOnce: () => followUp !== undefined,
      ...(options.awsSemantics?.modes.includes('overlapping-sweeps') ? { overlap: overlappingInvocations(options.awsSemantics) } : {}),
      name: 'sweep',
      log: (line) => sink.part('schedule', line),
    });

    // Until the poller and the timer have had a first go, they count from when the site came up.
    let startedAt = Date.now();
    const health = async (): Promise<Health> => {
      const dynamodb = await answersWithin(store.getSiteHeartbeat(), 2_000);
      return assessHealth(
        {
          now: Date.now(),
          dynamodb,
          ...(poller ? { streamPoller: { running: poller.running(), lastPollAt: poller.stats().lastPollAt ?? startedAt } } : {}),
          scheduler: { running: timer.running(), lastTickAt: timer.stats().lastTickAt ?? startedAt, intervalMs: sweepIntervalMs },
          siteAgent: reference ? reference.running() : simulator.running(),
        },
        options.healthStallAfterMs,
      );
    };

    const apiRequests = new Map<string, number>();
    const counters = () => countersOf({ timer, latestSweptRun: () => latestSweptRun, poller, simulator, apiRequests });
    const extraRoutes = runnerRoutes({ issuer, health, counters, metrics, simulator: reference ? withoutSimulatorControls(simulator) : simulator });

    // A client of its own, so that what the bench meters on storeClient is the store's traffic alone.
    const idempotency = { client: createDocumentClient(endpoint), tableName: names.idempotencyTable };
    recorder?.instrument(idempotency.client, 'dynamodb');
    // Its calls are throttled as the store's are (its table's capacity is AWS's to ration too), from draws of their own.
    if (options.awsSemantics?.modes.includes('throttle')) {
      injectThrottles(idempotency.client, { share: options.awsSemantics.throttleShare, random: randomFor(options.awsSemantics, 'throttle', 1) });
    }
    const server = await createLocalHttpServer({
      port: options.port,
      routes: gatewayRoutesOf(routes),
      handler: countingRequests(
        apiRequests,
        options.containerPerRequest
          ? (event, context) => createHttpApi(routes, { ...ctx, config: structuredClone(ctx.config) }, idempotency, logger)(event, context)
          : createHttpApi(routes, ctx, idempotency, logger),
      ),
      verifyToken: (token) => issuer.verify(token) as Promise<Record<string, unknown>>,
      extraRoutes,
      timeoutMs: limitsOf('TenantApi').timeoutMs,
      // API Gateway's own payload limit; each route's cap (functions/http/route.ts) is the function's to apply.
      maxBodyBytes: HTTP_API_PAYLOAD_BYTES,
    });
    stops.push(() => server.close());
    apiUrl = server.url;
    serverErrors = watchServerErrors(server.server);
    // Up before the fleet is registered, as the simulator listens before: registration's validations reach it.
    if (reference) await reference.start(apiUrl);

    if (options.registerFleet ?? true) {
      const fleet = demoFleet(config.simulator.machines);
      await registerMachines(
        ctx,
        fleet.map((m) => ({ id: m.id, machineType: m.machineType, rack: m.rack, ...(m.nvlinkDomain ? { nvlinkDomain: m.nvlinkDomain } : {}) })),
        { actor: 'local-runner', requestId: 'local-runner-seed' },
      );
    }
    if (poller) {
      // The poller stands in for the stream function's event source mapping, which reads the stream with its role.
      await runAsFunction('StreamHandler', () => poller.start());
      stops.push(() => poller.stop());
    }
    timer.start();
    if (!tables.created && options.startMigrations !== false) await declareDeployed(store, (line) => sink.part('runner', line));
    startedAt = Date.now();
    stops.push(() => timer.stop());
    if (!reference) {
      await simulator.start();
      stops.push(() => simulator.stop());
    }

    return {
      url: apiUrl,
      events,
      ctx,
      issuer,
      simulator,
      tableNames: names,
      storeClient,
      streamFilterDisagreements: streamFilter.disagreements,
      serverErrors,
      streamIdle: (timeoutMs) => poller?.whenIdle(timeoutMs) ?? Promise.resolve(),
      counters,
      health,
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
