import { Duration } from 'aws-cdk-lib';
import { AlarmStatusWidget, Dashboard, GraphWidget, MathExpression, Metric, SingleValueWidget, type IAlarm, type IMetric } from 'aws-cdk-lib/aws-cloudwatch';
import { Construct } from 'constructs';
import { metricCatalog, type MetricName } from '#runtime/metric-catalog.ts';

// Fleetward's own figures (functions/runtime/metric-catalog.ts) as CloudWatch sees them: Powertools EMF in one
// namespace, every series dimensioned by `service` and `site`, some by one more (machineType, outcome, entity).

export interface FleetMetricsProps {
  namespace: string;
  service: string;
  siteName: string;
}

export class FleetMetrics {
  private readonly props: FleetMetricsProps;

  constructor(props: FleetMetricsProps) {
    this.props = props;
  }

  /** A site-wide series (only the `service` and `site` dimensions). */
  site(name: MetricName, statistic: string, period: Duration): Metric {
    const { namespace, service, siteName } = this.props;
    return new Metric({ namespace, metricName: name, dimensionsMap: { service, site: siteName }, statistic, period });
  }

  /**
   * One line per value of `dimension` (each machine type, each outcome), whatever values exist: a SEARCH, so the
   * stack needs no list of machine types (they are registered at run time). Dashboards only: alarms cannot search.
   */
  each(name: MetricName, dimension: string, statistic: string, period: Duration): MathExpression {
    const { namespace, siteName } = this.props;
    const query = `{${namespace},${dimension},service,site} MetricName="${name}" site="${siteName}"`;
    return new MathExpression({ expression: `SEARCH('${query}', '${statistic}', ${period.toSeconds()})`, period, label: '' });
  }
}

/** What a gauge measures, as its catalog says: the dashboard's titles come from the same place as the metrics. */
const titled = (name: MetricName) => `${name}: ${metricCatalog[name].help}`;

export interface FleetDashboardProps {
  siteName: string;
  metrics: FleetMetrics;
  alarms: IAlarm[];
}

/** The site's CloudWatch dashboard: the fleet per machine type, repairs, creates, time to Ready and reconcile lag. */
export class FleetDashboard extends Construct {
  readonly dashboard: Dashboard;

  constructor(scope: Construct, id: string, { siteName, metrics, alarms }: FleetDashboardProps) {
    super(scope, id);
    const period = Duration.minutes(5);
    const perType = (name: MetricName): GraphWidget =>
      new GraphWidget({ title: titled(name), left: [metrics.each(name, 'machineType', 'Maximum', period)], width: 8, height: 6 });
    const site = (name: MetricName, statistic: string): IMetric => metrics.site(name, statistic, period);

    this.dashboard = new Dashboard(this, 'Dashboard', {
      dashboardName: `Fleetward-${siteName}`,
      defaultInterval: Duration.hours(6),
      widgets: [
        [new AlarmStatusWidget({ title: `Fleetward ${siteName} alarms`, alarms, width: 24, height: 3 })],
        [
          new SingleValueWidget({
            title: 'Repair breaker, replacements, site agent',
            metrics: [site('RepairBreakerTripped', 'Maximum'), site('ReplacementsInFlight', 'Maximum'), site('SiteAgentRosterAgeSeconds', 'Maximum')],
            width: 12,
            height: 4,
          }),
          new SingleValueWidget({ title: 'Repairs stuck past their SLA', metrics: [site('RepairsStuck', 'Maximum')], width: 12, height: 4 }),
        ],
        [perType('Machines'), perType('MachinesAllocatable'), perType('MachinesAssigned')],
        [perType('MachinesQuarantined'), perType('MachinesHeartbeatStale'), perType('MachinesOutForRepair')],
        [perType('RepairsUnclaimed'), perType('RepairsInRepair'), perType('RepairsStuck')],
        [
          new GraphWidget({
            title: 'Creates at the site agent',
            left: [site('CreateAttempts', 'Sum'), site('CreateRetries', 'Sum'), site('CreateSucceeded', 'Sum'), site('CreateFailures', 'Sum')],
            width: 12,
            height: 6,
          }),
          new GraphWidget({
            title: titled('CreateFailuresByOutcome'),
            left: [metrics.each('CreateFailuresByOutcome', 'outcome', 'Sum', period)],
            width: 12,
            height: 6,
          }),
        ],
        [
          new GraphWidget({ title: `${titled('TimeToReady')} (p90)`, left: [metrics.each('TimeToReady', 'machineType', 'p90', period)], width: 12, height: 6 }),
          new GraphWidget({ title: `${titled('ReconcileLag')} (p90)`, left: [metrics.each('ReconcileLag', 'entity', 'p90', period)], width: 12, height: 6 }),
        ],
      ],
    });
  }
}
