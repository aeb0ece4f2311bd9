import { Names, Stack, Validations } from 'aws-cdk-lib';
import { Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { Schedule, ScheduleExpression } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import type { Construct } from 'constructs';
import { SWEEP_FOLLOW_UP } from '#reconcilers/sweep-follow-up.ts';
import { agentCallerFunction, type AgentCallerProps } from './agent-caller.ts';
import type { FleetwardFunction } from './fleetward-function.ts';
import type { LoadedSite } from './site.ts';
import { nameInLogicalIds, SitePart, uniqueIdOutsideParts } from './site-part.ts';
import { sweepRate } from './sweep-schedule.ts';

export interface SweepProps extends AgentCallerProps {
  site: LoadedSite;
}

/**
 * The sweep of what is due (timeouts, backoff, stuck repairs): its function, run by an EventBridge Scheduler schedule,
 * and at once again by a rule on the bus when a run ran out of time with work left.
 */
export class Sweep extends SitePart {
  readonly function: FleetwardFunction;

  constructor(scope: Construct, id: string, { site, ...props }: SweepProps) {
    super(scope, id);
    this.function = agentCallerFunction(this, { name: 'SweepHandler', handler: 'sweep', purpose: 'scheduled sweep of what is due' }, props);
    const sweepFunction = this.function.function;

    const schedulerRole = new Role(this, 'SweepScheduleRole', {
      assumedBy: new ServicePrincipal('scheduler.amazonaws.com'),
      description: `Fleetward ${site.name}: lets EventBridge Scheduler invoke the sweep function, nothing else`,
    });
    const sweepEvery = sweepRate(site);
    // Lambda's own retries of an async invocation (two by default) are off, and a queued invocation older than one
    // interval is dropped: a failed run's work is still due, so the schedule's next run does it. Overlap stays
    // possible (the schedule, the follow-up rule and a redelivered invocation can each start a run), which the sweep's
    // lease turns away, so no reserved concurrency is set: it would throttle a follow-up behind a run about to end.
    sweepFunction.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: sweepEvery });
    new Schedule(this, 'SweepSchedule', {
      description: `Fleetward ${site.name}: sweep every ${sweepEvery.toHumanString()} (timeouts, backoff, stuck repairs)`,
      schedule: ScheduleExpression.rate(sweepEvery),
      // No retries: the next run does the same work, the sweep being level-triggered; an invocation older than one
      // interval is dropped for the same reason.
      target: new LambdaInvoke(sweepFunction, { role: schedulerRole, retryAttempts: 0, maxEventAge: sweepEvery }),
    });
    // The target grants lambda:InvokeFunction on the function and `<arn>:*` (its versions and aliases).
    const sweepArnToken = `<${Stack.of(this).getLogicalId(sweepFunction.node.defaultChild as CfnFunction)}.Arn>:*`;
    Validations.of(schedulerRole).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${sweepArnToken}]`,
      reason:
        "The wildcard is the qualifier of one function ARN (the sweep function's versions and aliases, as LambdaInvoke grants it); " +
        'the role can invoke no other function.',
    });

    // A run that runs out of time puts a follow-up event on the bus (its role may put exactly those, see
    // function-permissions.ts); this rule starts the next run at once. A lost follow-up costs only time: the
    // schedule's next run reads the due index from its start.
    const followUp = new Rule(this, 'SweepFollowUp', {
      eventBus: props.resources.bus,
      description: `Fleetward ${site.name}: run the sweep again at once when a run left due work`,
      eventPattern: { source: [SWEEP_FOLLOW_UP.source], detailType: [SWEEP_FOLLOW_UP.detailType] },
      targets: [new LambdaFunction(sweepFunction, { retryAttempts: 0, maxEventAge: sweepEvery })],
    });
    // The target names its invoke permission after the function's unique id, which includes this part: the permission
    // keeps the logical id it has with the function outside the parts, as every resource of a part does.
    const permission = followUp.node.findChild(`AllowEventRule${Names.nodeUniqueId(sweepFunction.node)}`);
    nameInLogicalIds(permission, `AllowEventRule${uniqueIdOutsideParts(sweepFunction)}`);
  }
}
