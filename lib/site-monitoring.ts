import { Duration } from 'aws-cdk-lib';
import type { HttpStage } from 'aws-cdk-lib/aws-apigatewayv2';
import { Alarm, ComparisonOperator, MathExpression, TreatMissingData, type IMetric } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { SITE_AGENT_SILENT_METRIC } from '#reconcilers/sweep.ts';
import type { FleetwardFunction } from './fleetward-function.ts';
import { METRICS_NAMESPACE, POWERTOOLS_SERVICE } from './function-environment.ts';
import { FUNCTION_NAMES, type FunctionName } from './lambda-functions.ts';
import { FleetDashboard, FleetMetrics } from './observability.ts';
import type { LoadedSite } from './site.ts';
import { SitePart } from './site-part.ts';

/** Instance creates that may finally fail within 15 minutes before the create-failures alarm goes off. */
const CREATE_FAILURES_PER_15_MINUTES = 5;

export interface SiteMonitoringProps {
  site: LoadedSite;
  functions: Record<FunctionName, FleetwardFunction>;
  /** The stream records the stream handler gave up on. */
  streamFailures: Queue;
  /** The repair events the example consumer could not take. */
  repairDeadLetters: Queue;
  stage: HttpStage;
}

/** What goes wrong, to the `Alarms` topic, and the fleet's CloudWatch dashboard with the fleet's own alarms on it. */
export class SiteMonitoring extends SitePart {
  readonly topic: Topic;
  /** The CloudWatch dashboard of the fleet's metrics (functions/runtime/metric-catalog.ts). */
  readonly fleetDashboard: FleetDashboard;

  constructor(scope: Construct, id: string, { site, functions, streamFailures, repairDeadLetters, stage }: SiteMonitoringProps) {
    super(scope, id);
    const { config } = site;
    this.topic = new Topic(this, 'Alarms', { displayName: `Fleetward ${site.name} alarms`, enforceSSL: true });
    const alarm = (alarmId: string, description: string, metric: IMetric, threshold: number, evaluationPeriods = 1) => {
      const created = new Alarm(this, alarmId, {
        alarmDescription: `Fleetward ${site.name}: ${description}`,
        metric,
        threshold,
        evaluationPeriods,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      created.addAlarmAction(new SnsAction(this.topic));
      return created;
    };
    const fleet = new FleetMetrics({ namespace: METRICS_NAMESPACE, service: POWERTOOLS_SERVICE, siteName: site.name });
    const queueDepth = (queue: Queue) => queue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1), statistic: 'Maximum' });

    alarm('StreamFailuresAlarm', 'stream records the stream handler gave up on are waiting in the on-failure queue', queueDepth(streamFailures), 1);
    alarm('RepairDeadLettersAlarm', 'repair events could not be delivered to, or were not processed from, the repair queue', queueDepth(repairDeadLetters), 1);
    for (const name of FUNCTION_NAMES) {
      alarm(`${name}ErrorsAlarm`, `${name} function errors`, functions[name].function.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }), 1);
    }
    alarm(
      'StreamIteratorAgeAlarm',
      'the stream handler is more than a minute behind the table',
      functions.StreamHandler.function.metric('IteratorAge', { period: Duration.minutes(1), statistic: 'Maximum' }),
      60_000,
      5,
    );
    alarm('Api5xxAlarm', 'the HTTP API answered 5xx', stage.metricServerError({ period: Duration.minutes(5), statistic: 'Sum' }), 1);
    alarm(
      'RepairsStuckAlarm',
      `repairs waiting past their SLA (claim within ${config.repair_sla.claim_minutes} min, repair within ${config.repair_sla.repair_hours} h)`,
      fleet.site('RepairsStuck', 'Maximum', Duration.minutes(5)),
      1,
    );
    alarm(
      'MaintenanceOverdueAlarm',
      'machines in declared maintenance are not back within the window the provider promised',
      fleet.site('MaintenanceOverdue', 'Maximum', Duration.minutes(5)),
      1,
    );
    // A data migration pending after an upgrade whose walk has not moved for half an hour (docs/deploy.md).
    alarm(
      'MigrationStalledAlarm',
      'a data migration is pending and walked no item for 30 minutes (GET /admin/migrations says where it stands)',
      new MathExpression({
        expression: 'IF(pending > 0 AND FILL(walked, 0) == 0, 1, 0)',
        usingMetrics: {
          pending: fleet.site('MigrationsPending', 'Maximum', Duration.minutes(30)),
          walked: fleet.site('MigrationItemsWalked', 'Sum', Duration.minutes(30)),
        },
        period: Duration.minutes(30),
      }),
      1,
    );
    // The fleet's own alarms, also shown on its dashboard.
    const fleetAlarms = [
      alarm(
        'SiteAgentSilentAlarm',
        `the site agent sent no roster for longer than the heartbeat timeout (${config.heartbeat.timeout_seconds} s): every machine counts as stale`,
        fleet.site(SITE_AGENT_SILENT_METRIC, 'Maximum', Duration.minutes(5)),
        1,
      ),
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
  }
}
