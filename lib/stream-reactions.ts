import { Duration, Validations } from 'aws-cdk-lib';
import { StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { agentCallerFunction, type AgentCallerProps } from './agent-caller.ts';
import type { FleetwardFunction } from './fleetward-function.ts';
import { SitePart } from './site-part.ts';
import { streamFilters } from './stream-filters.ts';

/**
 * Records per invocation of the stream function. A burst (a registration, a first roster's walk) is then a few
 * invocations rather than dozens, and each is one run, in which an aggregate (a rack's summary item, a counter
 * shard) gathers its changes into one write: fewer invocations write it fewer times. Lambda sends less when the
 * batch would pass its 6 MB payload, and a reaction not done by the batch's deadline comes back in the next one
 * (`STREAM_RESERVE_MS`).
 */
export const STREAM_BATCH_SIZE = 500;

/** Why the stream function's role lists streams on Resource "*" (its acknowledgment of cdk-nag's IAM5). */
const LIST_STREAMS_REASON =
  "dynamodb:ListStreams takes no resource but `*` (no resource-level permissions); Lambda's event source mapping " +
  "needs it on the stream function's role, and it only lists stream ARNs, reading none.";

/**
 * The table's stream and what reacts to it: the stream handler (reconcilers, repair events) behind Lambda's event
 * source mapping, its filters, and the queue of the records it gave up on.
 */
export class StreamReactions extends SitePart {
  readonly function: FleetwardFunction;
  readonly failures: Queue;

  constructor(scope: Construct, id: string, props: AgentCallerProps) {
    super(scope, id);
    const purpose = 'reacts to table changes (reconcilers, repair events)';
    this.function = agentCallerFunction(this, { name: 'StreamHandler', handler: 'stream', purpose, wildcardReasons: [LIST_STREAMS_REASON] }, props);
    this.failures = new Queue(this, 'StreamFailures', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    const mapping = this.function.function.addEventSourceMapping('TableStream', {
      eventSourceArn: props.resources.table.tableStreamArn!,
      startingPosition: StartingPosition.TRIM_HORIZON,
      batchSize: STREAM_BATCH_SIZE,
      maxBatchingWindow: Duration.seconds(0),
      filters: streamFilters(),
      reportBatchItemFailures: true,
      bisectBatchOnError: true,
      // Bounded: a record that keeps failing is parked on the queue; the sweep finishes its work anyway.
      retryAttempts: 10,
      maxRecordAge: Duration.hours(1),
      onFailure: new SqsDlq(this.failures),
    });
    mapping.node.addDependency(this.function.role);
    Validations.of(this.failures).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'This queue is itself a dead-letter destination: the stream mapping sends it the records it gave up on; a DLQ of a DLQ would only hide them further.',
    });
  }
}
