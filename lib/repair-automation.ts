import { Duration, Stack } from 'aws-cdk-lib';
import { Rule, type IEventBus } from 'aws-cdk-lib/aws-events';
import { SqsQueue } from 'aws-cdk-lib/aws-events-targets';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { EVENT_SOURCE } from '#runtime/events.ts';
import { SitePart } from './site-part.ts';

export interface RepairAutomationProps {
  bus: IEventBus;
}

/** An example consumer of the repair events: RepairRequested events wait in a queue for a repair tenant to act on. */
export class RepairAutomation extends SitePart {
  readonly requests: Queue;
  /** What could not be delivered to the queue, or was not processed from it. */
  readonly deadLetters: Queue;

  constructor(scope: Construct, id: string, { bus }: RepairAutomationProps) {
    super(scope, id);
    this.deadLetters = new Queue(this, 'RepairRequestsDeadLetters', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    this.requests = new Queue(this, 'RepairRequests', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(4),
      visibilityTimeout: Duration.minutes(5),
      deadLetterQueue: { queue: this.deadLetters, maxReceiveCount: 5 },
    });
    // In the stack's scope, not this part's: the target names its statement in the dead-letter queue's policy after the
    // rule's unique id, which a part in the rule's path would change (and with it the policy).
    new Rule(Stack.of(this), 'RepairRequestedRule', {
      eventBus: bus,
      description: 'Example repair automation: RepairRequested events wait in a queue for a repair tenant to claim the machine',
      eventPattern: { source: [EVENT_SOURCE], detailType: ['RepairRequested'] },
      targets: [new SqsQueue(this.requests, { deadLetterQueue: this.deadLetters, retryAttempts: 8, maxEventAge: Duration.hours(24) })],
    });
  }
}
