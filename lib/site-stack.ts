import { Annotations, CfnOutput, Duration, RemovalPolicy, Stack, Tags, Validations, type StackProps } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { CorsHttpMethod, HttpApi, HttpMethod, HttpNoneAuthorizer, HttpStage, LogGroupLogDestination, type CorsPreflightOptions, type HttpRoute } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { Alarm, ComparisonOperator, Metric, TreatMissingData, type IMetric } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { AttributeType, BillingMode, ProjectionType, StreamViewType, Table, type Attribute } from 'aws-cdk-lib/aws-dynamodb';
import { EventBus, Rule } from 'aws-cdk-lib/aws-events';
import { CfnRegistry, CfnSchema } from 'aws-cdk-lib/aws-eventschemas';
import { LambdaFunction, SqsQueue } from 'aws-cdk-lib/aws-events-targets';
import { Effect, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { StartingPosition, type CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Schedule, ScheduleExpression } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import { SiteConfigError } from '#config/site-config.ts';
import { eventCatalog, EVENT_TYPES } from '#domain/event-schemas.ts';
import { EVENT_SOURCE } from '#runtime/events.ts';
import { SWEEP_FOLLOW_UP } from '#reconcilers/sweep-follow-up.ts';
import { SITE_AGENT_SILENT_METRIC } from '#reconcilers/sweep.ts';
import { idempotencyTableDefinition, tableDefinition } from '#store/table.ts';
import { AgentNetwork } from './agent-network.ts';
import { apiOpenApiDocument, apiRouteSpecs, ROUTE_GROUPS, routeKeyOf, type RouteGroup } from './api-routes.ts';
import { AWS_LIMITS, concurrencyMessage } from './aws-limits.ts';
import { SiteDashboard } from './dashboard.ts';
import { eventJsonSchema } from './event-schemas.ts';
import { applyRouteThrottles, reservedConcurrency, stageThrottle } from './edge-limits.ts';
import { FleetwardFunction, FUNCTION_RUNTIME, handlerEntry } from './fleetward-function.ts';
import { API_FUNCTION_TIMEOUT_SECONDS, reconcilerTimeoutSeconds } from './function-timeouts.ts';
import { FUNCTION_GRANTS } from './function-permissions.ts';
import { grantStatement } from './grant-statements.ts';
import { API_FUNCTION_OF, FUNCTION_NAMES, type FunctionName } from './lambda-functions.ts';
import { parseLogicalResource } from './logical-resources.ts';
import { FleetDashboard, FleetMetrics } from './observability.ts';
import type { LoadedSite } from './site.ts';
import { streamFilters } from './stream-filters.ts';
import { sweepRate } from './sweep-schedule.ts';

/** Namespace and name of the stuck-repair metric the sweep reports (see docs/deploy.md for its dimensions). */
export const METRICS_NAMESPACE = 'Fleetward';
export const POWERTOOLS_SERVICE = 'fleetward';
export const REPAIRS_STUCK_METRIC = 'RepairsStuck';
/** Instance creates that may finally fail within 15 minutes before the create-failures alarm goes off. */
export const CREATE_FAILURES_PER_15_MINUTES = 5;

/** Lambda's limit on one function's environment (keys and values together). */
const LAMBDA_ENV_LIMIT_BYTES = 4096;

/** Why the stream function's role lists streams on Resource "*" (its acknowledgment of cdk-nag's IAM5). */
const LIST_STREAMS_REASON =
  "dynamodb:ListStreams takes no resource but `*` (no resource-level permissions); Lambda's event source mapping " +
  "needs it on the stream function's role, and it only lists stream ARNs, reading none.";

export const stackNameOf = (site: string) => `Fleetward-${site}`;

export interface SiteStackProps extends StackProps {
  site: LoadedSite;
  /** How long function and access logs are kept. */
  logRetention?: RetentionDays;
}

// ---- the table, from the store's own definition ------------------------------------------------------------

function attributeOf(definition: CreateTableCommandInput, name: string): Attribute {
  const declared = definition.AttributeDefinitions?.find((a) => a.AttributeName === name)?.AttributeType;
  const types: Record<string, AttributeType> = { S: AttributeType.STRING, N: AttributeType.NUMBER, B: AttributeType.BINARY };
  const type = declared ? types[declared] : undefined;
  if (!type) throw new Error(`table definition: attribute ${name} has no usable type (${declared})`);
  return { name, type };
}

function keysOf(definition: CreateTableCommandInput, schema: CreateTableCommandInput['KeySchema']) {
  const named = (keyType: 'HASH' | 'RANGE') => schema?.find((k) => k.KeyType === keyType)?.AttributeName;
  const hash = named('HASH');
  const range = named('RANGE');
  if (!hash) throw new Error('table definition: a key schema without a HASH key');
  return { partitionKey: attributeOf(definition, hash), ...(range ? { sortKey: attributeOf(definition, range) } : {}) };
}

const projections: Record<string, ProjectionType> = { ALL: ProjectionType.ALL, KEYS_ONLY: ProjectionType.KEYS_ONLY, INCLUDE: ProjectionType.INCLUDE };
const projectionOf = (type: string | undefined) => projections[type ?? 'ALL'] ?? ProjectionType.ALL;

function billingOf(definition: CreateTableCommandInput): BillingMode {
  if (definition.BillingMode !== 'PAY_PER_REQUEST') throw new Error(`table definition: expected on-demand billing, got ${definition.BillingMode}`);
  return BillingMode.PAY_PER_REQUEST;
}

// ---- CORS for the dashboard -------------------------------------------------------------------------------

/** Request headers a browser client sends: the bearer token, JSON bodies, and idempotency keys of POSTs. */
export const DASHBOARD_CORS_HEADERS = ['authorization', 'content-type', 'idempotency-key'];

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

// ---- the stack ---------------------------------------------------------------------------------------------

/**
 * One site's control plane: the HTTP API and its functions, the table and its stream reactions, the sweep
 * schedule, the repair-event bus and the alarms. Everything site-specific comes from `sites/<name>.toml`.
 */
export class SiteStack extends Stack {
  readonly site: LoadedSite;
  readonly table: Table;
  readonly idempotencyTable: Table;
  readonly bus: EventBus;
  /** The bus's events, one JSON Schema per type (the ones docs/events/ holds). */
  readonly eventSchemaRegistry: CfnRegistry;
  readonly httpApi: HttpApi;
  readonly stage: HttpStage;
  readonly apiFunctions: Record<RouteGroup, FleetwardFunction>;
  readonly streamFunction: FleetwardFunction;
  readonly sweepFunction: FleetwardFunction;
  /** The functions that call the site agent (its reconcilers' creates, deletes and status checks): stream and sweep. */
  readonly agentCallers: FleetwardFunction[];
  /** The VPC those functions run in, with its endpoints; undefined without `[site_agent] vpc`. */
  readonly agentNetwork: AgentNetwork | undefined;
  /** All five functions by name (lib/lambda-functions.ts), each with its own role. */
  readonly functions: Record<FunctionName, FleetwardFunction>;
  readonly streamFailures: Queue;
  readonly alarmTopic: Topic;
  /** The CloudWatch dashboard of the fleet's metrics (functions/runtime/metric-catalog.ts). */
  readonly fleetDashboard: FleetDashboard;
  /** The dashboard (`web/`) behind CloudFront; undefined when `[dashboard] enabled = false`. */
  readonly dashboard: SiteDashboard | undefined;

  constructor(scope: Construct, id: string, props: SiteStackProps) {
    super(scope, id, { description: `Fleetward control plane for site ${props.site.name}`, ...props });
    const { site } = props;
    const { config } = site;
    this.site = site;
    const logRetention = props.logRetention ?? RetentionDays.ONE_MONTH;
    Tags.of(this).add('fleetward:site', site.name);

    // -- data: the single table (from tableDefinition, so the local runner and AWS never drift) --------------
    const definition = tableDefinition('unused');
    const streamView = definition.StreamSpecification?.StreamViewType;
    if (!definition.StreamSpecification?.StreamEnabled || !streamView) throw new Error('table definition: the stream must be enabled');
    this.table = new Table(this, 'Table', {
      ...keysOf(definition, definition.KeySchema),
      billingMode: billingOf(definition),
      stream: StreamViewType[streamView],
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    for (const index of definition.GlobalSecondaryIndexes ?? []) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.IndexName!,
        ...keysOf(definition, index.KeySchema),
        projectionType: projectionOf(index.Projection?.ProjectionType),
        ...(index.Projection?.NonKeyAttributes ? { nonKeyAttributes: index.Projection.NonKeyAttributes } : {}),
      });
    }

    // Powertools idempotency records: 24 h replays, expired by TTL. Nothing in it outlives the API, so it goes
    // with the stack; point-in-time recovery stays on for the rare case of an accidental delete of records.
    const idempotency = idempotencyTableDefinition('unused');
    this.idempotencyTable = new Table(this, 'IdempotencyTable', {
      ...keysOf(idempotency, idempotency.KeySchema),
      billingMode: billingOf(idempotency),
      timeToLiveAttribute: 'expiration',
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      removalPolicy: RemovalPolicy.DESTROY,
    });

    // -- repair events ------------------------------------------------------------------------------------------
    this.bus = new EventBus(this, 'RepairEvents', {
      eventBusName: `fleetward-${site.name}`,
      description: `Repair events of Fleetward site ${site.name} (source "${EVENT_SOURCE}")`,
    });
    // Next to the bus, so consumers find each event's schema (and its code bindings) where the events are.
    this.eventSchemaRegistry = new CfnRegistry(this, 'RepairEventSchemas', {
      registryName: `fleetward-${site.name}`,
      description: `Schemas of the repair events of Fleetward site ${site.name} (source "${EVENT_SOURCE}")`,
    });
    for (const type of EVENT_TYPES) {
      new CfnSchema(this, `${type}Schema`, {
        registryName: this.eventSchemaRegistry.attrRegistryName,
        schemaName: `${EVENT_SOURCE}@${type}`,
        type: 'JSONSchemaDraft4',
        content: JSON.stringify(eventJsonSchema(type)),
        description: eventCatalog[type].description,
      });
    }

    // -- functions ---------------------------------------------------------------------------------------------
    const environment = this.functionEnvironment(site);
    const agentEnvironment = this.agentCallerEnvironment(site, environment);
    const agentVpc = config.site_agent.vpc;
    this.agentNetwork = agentVpc ? new AgentNetwork(this, 'AgentNetwork', { siteName: site.name, vpc: agentVpc }) : undefined;
    const network = this.agentNetwork ? { network: this.agentNetwork } : {};
    const reconcilerTimeout = Duration.seconds(reconcilerTimeoutSeconds(config));

    const describe: Record<RouteGroup, string> = {
      tenant: 'tenant routes (instances, machines, meta-instances)',
      admin: 'provider-admin routes',
      'site-agent': 'site agent routes (heartbeats, cleanup reports)',
    };
    // Reserved concurrency on every API function, for two reasons. The site agent's share is a guarantee: a tenant
    // burst (or the stream and sweep functions scaling out) can never take the account's last concurrency from the
    // heartbeats that keep the fleet allocatable. The tenant and admin shares are ceilings: however hard the API is
    // hit, each group runs at most that many DynamoDB writers at once and leaves the rest of the account alone.
    // (Lambda has no per-function ceiling without a reservation.) The stage throttle below turns most of a flood
    // away before it gets here; the ceilings bound whatever passes it.
    const concurrency = reservedConcurrency(config.lambda);
    const reserved = Object.values(concurrency).reduce((sum, count) => sum + count, 0);
    if (reserved + AWS_LIMITS.unreservedConcurrency > config.lambda.account_concurrency) {
      throw new SiteConfigError(`${site.file}: ${concurrencyMessage(reserved, config.lambda.account_concurrency)}`);
    }
    const openApiDocument = apiOpenApiDocument();
    this.apiFunctions = Object.fromEntries(
      ROUTE_GROUPS.map((group) => [
        group,
        new FleetwardFunction(this, API_FUNCTION_OF[group], {
          entry: handlerEntry('api'),
          description: `Fleetward ${site.name}: HTTP API, ${describe[group]}`,
          environment,
          memorySize: 1024,
          timeout: Duration.seconds(API_FUNCTION_TIMEOUT_SECONDS),
          logRetention,
          reservedConcurrentExecutions: concurrency[group],
          openApiDocument,
        }),
      ]),
    ) as Record<RouteGroup, FleetwardFunction>;
    this.streamFunction = new FleetwardFunction(this, 'StreamHandler', {
      entry: handlerEntry('stream'),
      description: `Fleetward ${site.name}: reacts to table changes (reconcilers, repair events)`,
      environment: agentEnvironment,
      ...network,
      memorySize: 512,
      timeout: reconcilerTimeout,
      logRetention,
      wildcardReasons: [LIST_STREAMS_REASON],
    });
    this.sweepFunction = new FleetwardFunction(this, 'SweepHandler', {
      entry: handlerEntry('sweep'),
      description: `Fleetward ${site.name}: scheduled sweep of what is due`,
      environment: agentEnvironment,
      ...network,
      memorySize: 512,
      timeout: reconcilerTimeout,
      logRetention,
    });

    // -- least privilege: each role gets only what its function calls (function-permissions.ts, proven by test/iam)
    const functions: Record<FunctionName, FleetwardFunction> = (this.functions = {
      ...(Object.fromEntries(ROUTE_GROUPS.map((group) => [API_FUNCTION_OF[group], this.apiFunctions[group]])) as Record<FunctionName, FleetwardFunction>),
      StreamHandler: this.streamFunction,
      SweepHandler: this.sweepFunction,
    });
    for (const name of FUNCTION_NAMES) {
      const grants = FUNCTION_GRANTS[name];
      for (const grant of grants) functions[name].role.addToPrincipalPolicy(grantStatement(grant, (resource) => this.arnOf(resource)));
    }
    this.agentCallers = [this.streamFunction, this.sweepFunction];
    for (const caller of this.agentCallers) {
      if (site.signingSecretArn) {
        caller.role.addToPrincipalPolicy(
          new PolicyStatement({
            sid: 'ReadAgentSigningKeys',
            effect: Effect.ALLOW,
            actions: ['secretsmanager:GetSecretValue'],
            resources: [site.signingSecretArn],
          }),
        );
      }
      // Their first calls go through the endpoints.
      if (this.agentNetwork) caller.function.node.addDependency(this.agentNetwork);
    }

    // -- stream reactions ---------------------------------------------------------------------------------------
    this.streamFailures = new Queue(this, 'StreamFailures', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    const mapping = this.streamFunction.function.addEventSourceMapping('TableStream', {
      eventSourceArn: this.table.tableStreamArn!,
      startingPosition: StartingPosition.TRIM_HORIZON,
      batchSize: 100,
      maxBatchingWindow: Duration.seconds(0),
      filters: streamFilters(),
      reportBatchItemFailures: true,
      bisectBatchOnError: true,
      // Bounded: a record that keeps failing is parked on the queue; the sweep finishes its work anyway.
      retryAttempts: 10,
      maxRecordAge: Duration.hours(1),
      onFailure: new SqsDlq(this.streamFailures),
    });
    mapping.node.addDependency(this.streamFunction.role);
    Validations.of(this.streamFailures).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'This queue is itself a dead-letter destination: the stream mapping sends it the records it gave up on; a DLQ of a DLQ would only hide them further.',
    });

    // -- the sweep schedule -------------------------------------------------------------------------------------
    const schedulerRole = new Role(this, 'SweepScheduleRole', {
      assumedBy: new ServicePrincipal('scheduler.amazonaws.com'),
      description: `Fleetward ${site.name}: lets EventBridge Scheduler invoke the sweep function, nothing else`,
    });
    const sweepEvery = sweepRate(site);
    new Schedule(this, 'SweepSchedule', {
      description: `Fleetward ${site.name}: sweep every ${sweepEvery.toHumanString()} (timeouts, backoff, stuck repairs)`,
      schedule: ScheduleExpression.rate(sweepEvery),
      // No retries: the next run does the same work, the sweep being level-triggered; an invocation older than one
      // interval is dropped for the same reason.
      target: new LambdaInvoke(this.sweepFunction.function, { role: schedulerRole, retryAttempts: 0, maxEventAge: sweepEvery }),
    });
    // The target grants lambda:InvokeFunction on the function and `<arn>:*` (its versions and aliases).
    const sweepArnToken = `<${this.getLogicalId(this.sweepFunction.function.node.defaultChild as CfnFunction)}.Arn>:*`;
    Validations.of(schedulerRole).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${sweepArnToken}]`,
      reason:
        'The wildcard is the qualifier of one function ARN (the sweep function\'s versions ' +
          'and aliases, as LambdaInvoke grants it); the role can invoke no other function.',
    });
    // A run that runs out of time puts a follow-up event on the bus (its role may put exactly those, see
    // function-permissions.ts); this rule starts the next run at once. A lost follow-up costs only time: the
    // schedule's next run reads the due index from its start.
    new Rule(this, 'SweepFollowUp', {
      eventBus: this.bus,
      description: `Fleetward ${site.name}: run the sweep again at once when a run left due work`,
      eventPattern: { source: [SWEEP_FOLLOW_UP.source], detailType: [SWEEP_FOLLOW_UP.detailType] },
      targets: [new LambdaFunction(this.sweepFunction.function, { retryAttempts: 0, maxEventAge: sweepEvery })],
    });

    // -- HTTP API -----------------------------------------------------------------------------------------------
    const authorizer = new HttpJwtAuthorizer('Jwt', config.auth.issuer, {
      jwtAudience: [config.auth.audience],
      authorizerName: `fleetward-${site.name}-jwt`,
    });
    // The dashboard first: the API's CORS allows exactly its origin, and its config.json names the API's URL.
    this.dashboard = config.dashboard.enabled ? new SiteDashboard(this, 'Dashboard', { siteName: site.name, logRetention }) : undefined;
    this.httpApi = new HttpApi(this, 'Api', {
      apiName: `fleetward-${site.name}`,
      description: `Fleetward HTTP API of site ${site.name}`,
      createDefaultStage: false,
      ...(this.dashboard ? { corsPreflight: dashboardCors(this.dashboard.origin) } : {}),
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
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
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
        ),
      },
    });
    const integrations = Object.fromEntries(
      ROUTE_GROUPS.map((group) => [group, new HttpLambdaIntegration(`${pascal(group)}Integration`, this.apiFunctions[group].function)]),
    ) as Record<RouteGroup, HttpLambdaIntegration>;
    const open = new HttpNoneAuthorizer();
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
          reason: `${route.method} ${route.path} (${route.operationId}) is public by the route table ` +
            `(roles: 'public'): it serves no fleet data, and clients read it before they have a token.`,
        });
      }
    }

    // Per-route limits where one route's cost differs from the rest (e.g. creates, which contend for machines).
    applyRouteThrottles(this.stage, config.api, wiredRoutes);

    this.dashboard?.deployFiles(this.stage.url);

    // -- repair automation: an example consumer of the bus ------------------------------------------------------
    const repairDeadLetters = new Queue(this, 'RepairRequestsDeadLetters', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    const repairRequests = new Queue(this, 'RepairRequests', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(4),
      visibilityTimeout: Duration.minutes(5),
      deadLetterQueue: { queue: repairDeadLetters, maxReceiveCount: 5 },
    });
    new Rule(this, 'RepairRequestedRule', {
      eventBus: this.bus,
      description: 'Example repair automation: RepairRequested events wait in a queue for a repair tenant to claim the machine',
      eventPattern: { source: [EVENT_SOURCE], detailType: ['RepairRequested'] },
      targets: [new SqsQueue(repairRequests, { deadLetterQueue: repairDeadLetters, retryAttempts: 8, maxEventAge: Duration.hours(24) })],
    });

    // -- alarms -------------------------------------------------------------------------------------------------
    this.alarmTopic = new Topic(this, 'Alarms', { displayName: `Fleetward ${site.name} alarms`, enforceSSL: true });

    const alarm = (id: string, description: string, metric: IMetric, threshold: number, evaluationPeriods = 1) => {
      const created = new Alarm(this, id, {
        alarmDescription: `Fleetward ${site.name}: ${description}`,
        metric,
        threshold,
        evaluationPeriods,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      created.addAlarmAction(new SnsAction(this.alarmTopic));
      return created;
    };
    alarm(
      'StreamFailuresAlarm',
      'stream records the stream handler gave up on are waiting in the on-failure queue',
      this.streamFailures.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1), statistic: 'Maximum' }),
      1,
    );
    alarm(
      'RepairDeadLettersAlarm',
      'repair events could not be delivered to, or were not processed from, the repair queue',
      repairDeadLetters.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1), statistic: 'Maximum' }),
      1,
    );
    for (const name of FUNCTION_NAMES) {
      alarm(`${name}ErrorsAlarm`, `${name} function errors`, functions[name].function.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }), 1);
    }
    alarm(
      'StreamIteratorAgeAlarm',
      'the stream handler is more than a minute behind the table',
      this.streamFunction.function.metric('IteratorAge', { period: Duration.minutes(1), statistic: 'Maximum' }),
      60_000,
      5,
    );
    alarm('Api5xxAlarm', 'the HTTP API answered 5xx', this.stage.metricServerError({ period: Duration.minutes(5), statistic: 'Sum' }), 1);
    alarm(
      'RepairsStuckAlarm',
      `repairs waiting past their SLA (claim within ${config.repair_sla.claim_minutes} min, repair within ${config.repair_sla.repair_hours} h)`,
      new Metric({
        namespace: METRICS_NAMESPACE,
        metricName: REPAIRS_STUCK_METRIC,
        dimensionsMap: { service: POWERTOOLS_SERVICE, site: site.name },
        period: Duration.minutes(5),
        statistic: 'Maximum',
      }),
      1,
    );
    const siteAgentSilentAlarm = alarm(
      'SiteAgentSilentAlarm',
      `the site agent sent no roster for longer than the heartbeat timeout (${config.heartbeat.timeout_seconds} s): every machine counts as stale`,
      new Metric({
        namespace: METRICS_NAMESPACE,
        metricName: SITE_AGENT_SILENT_METRIC,
        dimensionsMap: { service: POWERTOOLS_SERVICE, site: site.name },
        period: Duration.minutes(5),
        statistic: 'Maximum',
      }),
      1,
    );

    const fleet = new FleetMetrics({ namespace: METRICS_NAMESPACE, service: POWERTOOLS_SERVICE, siteName: site.name });
    const fleetAlarms = [
      siteAgentSilentAlarm,
      alarm(
        'RepairBreakerTrippedAlarm',
        'the repair-storm breaker tripped: repair requests are held back until an operator resets it',
        fleet.site('RepairBreakerTripped', 'Maximum', Duration.minutes(5)),
        1,
      ),
      alarm(
        'CreateFailuresAlarm',
        `${CREATE_FAILURES_PER_15_MINUTES} or more instance creates failed within 15 minutes`,
        fleet.site('CreateFailures', 'Sum', Duration.minutes(15)),
        CREATE_FAILURES_PER_15_MINUTES,
      ),
    ];
    this.fleetDashboard = new FleetDashboard(this, 'FleetDashboard', { siteName: site.name, metrics: fleet, alarms: fleetAlarms });

    // -- justified exceptions for the whole stack ---------------------------------------------------------------
    Validations.of(this).acknowledge({
      id: 'AwsSolutions-L1',
      reason: `DESIGN.md pins the Lambda runtime to ${FUNCTION_RUNTIME.name}: the local runner, the tests and the ` +
        'dependencies are verified on Node 22; moving to a newer runtime is a deliberate upgrade, not a drive-by.',
    });

    // -- outputs ------------------------------------------------------------------------------------------------
    new CfnOutput(this, 'ApiUrl', { value: this.stage.url, description: 'Base URL of the HTTP API' });
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'EventBusName', { value: this.bus.eventBusName, description: 'Repair events for repair automation' });
    new CfnOutput(this, 'RepairRequestsQueueUrl', { value: repairRequests.queueUrl, description: 'Example consumer: RepairRequested events' });
    new CfnOutput(this, 'AlarmTopicArn', { value: this.alarmTopic.topicArn, description: 'Subscribe to receive the alarms' });
    if (this.dashboard) {
      new CfnOutput(this, 'DashboardUrl', { value: `${this.dashboard.origin}/`, description: 'The site dashboard (sign in with a provider-admin token)' });
    }
  }

  /** The ARN of a logical resource (lib/logical-resources.ts) in this stack. */
  private arnOf(resource: string): string {
    const parsed = parseLogicalResource(resource);
    switch (parsed?.kind) {
      case 'table':
        return (parsed.table === 'main' ? this.table : this.idempotencyTable).tableArn;
      case 'index':
        return `${this.table.tableArn}/index/${parsed.indexName}`;
      case 'stream':
        return this.table.tableStreamArn!;
      case 'event-bus':
        return this.bus.eventBusArn;
      case 'any':
        return '*';
      default:
        throw new Error(`function-permissions.ts: ${resource} is no resource of the stack`);
    }
  }

  /** What contextFromEnv (functions/handlers/lambda-context.ts) reads; all of it from the site config. */
  private functionEnvironment(site: LoadedSite): Record<string, string> {
    return checkedEnvironment(site, {
      TABLE_NAME: this.table.tableName,
      IDEMPOTENCY_TABLE_NAME: this.idempotencyTable.tableName,
      EVENT_BUS_NAME: this.bus.eventBusName,
      SITE_CONFIG_JSON: JSON.stringify(site.config),
      POWERTOOLS_SERVICE_NAME: POWERTOOLS_SERVICE,
      POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
    });
  }

  /** The environment of the functions that call the site agent: also where it is and where its signing keys are. */
  private agentCallerEnvironment(site: LoadedSite, common: Record<string, string>): Record<string, string> {
    const environment = { ...common };
    if (site.agentUrl) {
      environment.SITE_AGENT_URL = site.agentUrl;
    } else {
      Annotations.of(this).addWarningV2(
        'fleetward:no-agent-url',
        `site ${site.name} has no [site] agent_url: the functions cannot start until one is given (set it in ${site.name}.toml or pass -c agentUrl=<url>)`,
      );
    }
    if (site.signingSecretArn) {
      environment.SITE_AGENT_SIGNING_SECRET_ARN = site.signingSecretArn;
    } else {
      Annotations.of(this).addWarningV2(
        'fleetward:no-signing-secret',
        `site ${site.name} has no [site_agent] signing_secret_arn: the stream and sweep functions cannot call the site agent until one is given`,
      );
    }
    return checkedEnvironment(site, environment);
  }
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

const pascal = (name: string) =>
  name
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
