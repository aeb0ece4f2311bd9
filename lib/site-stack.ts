import { CfnOutput, Duration, Stack, Tags, Validations, type CfnElement, type StackProps } from 'aws-cdk-lib';
import type { HttpApi, HttpStage } from 'aws-cdk-lib/aws-apigatewayv2';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import type { EventBus } from 'aws-cdk-lib/aws-events';
import type { CfnRegistry } from 'aws-cdk-lib/aws-eventschemas';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Topic } from 'aws-cdk-lib/aws-sns';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { AgentNetwork } from './agent-network.ts';
import type { AgentCallerProps } from './agent-caller.ts';
import { ROUTE_GROUPS, type RouteGroup } from './api-routes.ts';
import { SiteDashboard } from './dashboard.ts';
import { FUNCTION_RUNTIME, type FleetwardFunction } from './fleetward-function.ts';
import { agentCallerEnvironment, functionEnvironment } from './function-environment.ts';
import { reconcilerTimeoutSeconds } from './function-timeouts.ts';
import { API_FUNCTION_OF, type FunctionName } from './lambda-functions.ts';
import type { FleetDashboard } from './observability.ts';
import { RepairAutomation } from './repair-automation.ts';
import { RepairEventBus } from './repair-event-bus.ts';
import { SiteMonitoring } from './site-monitoring.ts';
import { SiteApi } from './site-api.ts';
import type { CalledResources } from './site-function.ts';
import { logicalIdOutsideParts } from './site-part.ts';
import { SiteTables } from './site-tables.ts';
import type { LoadedSite } from './site.ts';
import { StreamReactions } from './stream-reactions.ts';
import { Sweep } from './sweep.ts';

export const stackNameOf = (site: string) => `Fleetward-${site}`;

export interface SiteStackProps extends StackProps {
  site: LoadedSite;
  /** How long function and access logs are kept. */
  logRetention?: RetentionDays;
}

/**
 * One site's control plane, wired from its parts: the tables, the repair-event bus, the HTTP API and its functions,
 * the stream reactions, the sweep, the example repair automation, the alarms, and the dashboard. Everything
 * site-specific comes from `sites/<name>.toml`.
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

    const { table, idempotencyTable } = new SiteTables(this, 'Tables');
    const events = new RepairEventBus(this, 'RepairEventBus', { siteName: site.name });
    const resources: CalledResources = { table, idempotencyTable, bus: events.bus };
    const environment = functionEnvironment(site, resources);
    const agentVpc = config.site_agent.vpc;
    this.agentNetwork = agentVpc ? new AgentNetwork(this, 'AgentNetwork', { siteName: site.name, vpc: agentVpc }) : undefined;

    // The dashboard before the API: the API's CORS allows exactly its origin, and its config.json names the API's URL.
    this.dashboard = config.dashboard.enabled ? new SiteDashboard(this, 'Dashboard', { siteName: site.name, logRetention }) : undefined;
    const api = new SiteApi(this, 'HttpApi', { site, resources, environment, logRetention, dashboardOrigin: this.dashboard?.origin });
    this.dashboard?.deployFiles(api.stage.url);

    const agentCaller: AgentCallerProps = {
      siteName: site.name,
      resources,
      environment: agentCallerEnvironment(this, site, environment),
      timeout: Duration.seconds(reconcilerTimeoutSeconds(config)),
      logRetention,
      network: this.agentNetwork,
      signingSecretArn: site.signingSecretArn,
    };
    const streamReactions = new StreamReactions(this, 'StreamReactions', agentCaller);
    const sweep = new Sweep(this, 'Sweep', { ...agentCaller, site });
    const repairAutomation = new RepairAutomation(this, 'RepairAutomation', { bus: events.bus });

    this.table = table;
    this.idempotencyTable = idempotencyTable;
    this.bus = events.bus;
    this.eventSchemaRegistry = events.schemaRegistry;
    this.httpApi = api.httpApi;
    this.stage = api.stage;
    this.apiFunctions = api.functions;
    this.streamFunction = streamReactions.function;
    this.streamFailures = streamReactions.failures;
    this.sweepFunction = sweep.function;
    this.agentCallers = [this.streamFunction, this.sweepFunction];
    this.functions = {
      ...(Object.fromEntries(ROUTE_GROUPS.map((group) => [API_FUNCTION_OF[group], api.functions[group]])) as Record<FunctionName, FleetwardFunction>),
      StreamHandler: this.streamFunction,
      SweepHandler: this.sweepFunction,
    };

    const monitoring = new SiteMonitoring(this, 'Monitoring', {
      site,
      functions: this.functions,
      streamFailures: this.streamFailures,
      repairDeadLetters: repairAutomation.deadLetters,
      stage: this.stage,
    });
    this.alarmTopic = monitoring.topic;
    this.fleetDashboard = monitoring.fleetDashboard;

    // A justified exception for the whole stack.
    Validations.of(this).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        `DESIGN.md pins the Lambda runtime to ${FUNCTION_RUNTIME.name}: the local runner, the tests and the dependencies are verified on ` +
        'Node 22; moving to a newer runtime is a deliberate upgrade, not a drive-by.',
    });

    new CfnOutput(this, 'ApiUrl', { value: this.stage.url, description: 'Base URL of the HTTP API' });
    new CfnOutput(this, 'TableName', { value: table.tableName });
    new CfnOutput(this, 'EventBusName', { value: this.bus.eventBusName, description: 'Repair events for repair automation' });
    new CfnOutput(this, 'RepairRequestsQueueUrl', { value: repairAutomation.requests.queueUrl, description: 'Example consumer: RepairRequested events' });
    new CfnOutput(this, 'AlarmTopicArn', { value: this.alarmTopic.topicArn, description: 'Subscribe to receive the alarms' });
    if (this.dashboard) {
      new CfnOutput(this, 'DashboardUrl', { value: `${this.dashboard.origin}/`, description: 'The site dashboard (sign in with a provider-admin token)' });
    }
  }

  /** The parts (lib/site-part.ts) are left out of logical ids: each resource keeps the one it has as the stack's own. */
  protected override allocateLogicalId(element: CfnElement): string {
    return logicalIdOutsideParts(element);
  }
}
