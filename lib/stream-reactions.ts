import { Duration, Validations } from 'aws-cdk-lib';
import { StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { agentCallerFunction, type AgentCallerProps } from './agent-caller.ts';
import type { FleetwardFunction } from './fleetward-function.ts';
import { SitePart } from './site-part.ts';
import { streamFilters } from './stream-filters.ts';
import { streamMappingSettings } from './stream-mapping.ts';

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
    const settings = streamMappingSettings();
    const mapping = this.function.function.addEventSourceMapping('TableStream', {
      eventSourceArn: props.resources.table.tableStreamArn!,
      startingPosition: StartingPosition.TRIM_HORIZON,
      batchSize: settings.batchSize,
      maxBatchingWindow: Duration.seconds(0),
      filters: streamFilters(),
      reportBatchItemFailures: true,
      bisectBatchOnError: settings.bisectBatchOnFunctionError,
      retryAttempts: settings.maximumRetryAttempts,
      maxRecordAge: Duration.seconds(settings.maximumRecordAgeSeconds),
      parallelizationFactor: settings.parallelizationFactor,
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
