import { EVENT_SOURCE } from '#runtime/events.ts';
import { SWEEP_FOLLOW_UP } from '#reconcilers/sweep-follow-up.ts';
import type { indexes } from '#store/table.ts';
import type { FunctionName } from './lambda-functions.ts';
import { logicalResource } from './logical-resources.ts';

/**
 * What each function's role may do beyond its own log group and X-Ray (which FleetwardFunction and active tracing
 * grant): the one list the stack builds the roles from (lib/grant-statements.ts) and the IAM test holds the recorded
 * calls against (test/iam). Each grant is what the function was seen to call in the e2e suite, and no more: the test
 * fails on a call a role does not allow, and on a grant nothing used unless AWS_ONLY_ACTIONS says why.
 */
export interface Grant {
  /** The statement's id in the role's policy. */
  sid: string;
  actions: readonly string[];
  /** Logical resources (logical-resources.ts). */
  resources: readonly string[];
  conditions?: Record<string, Record<string, string | string[]>>;
}

type IndexName = (typeof indexes)[keyof typeof indexes]['name'];

/** Queries of exactly these GSIs: a grant names each index, never `index/*`. */
const queries = (...names: IndexName[]): Grant => ({ sid: 'TableIndexes', actions: ['dynamodb:Query'], resources: names.map(logicalResource.index) });
const tableItems = (...actions: string[]): Grant => ({
  sid: 'TableItems',
  actions: actions.map((action) => `dynamodb:${action}`),
  resources: [logicalResource.table('main')],
});

/**
 * Powertools' Idempotency-Key records: a first request puts one (PutItem, conditional, which also returns the record
 * a replay finds), its 2xx answer is saved into it (UpdateItem), any other answer deletes it (DeleteItem). Powertools
 * reads with GetItem only when DynamoDB leaves the conflicting record out of the failed condition, which it does not.
 */
const idempotencyRecords: Grant = {
  sid: 'IdempotencyRecords',
  actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
  resources: [logicalResource.table('idempotency')],
};

/**
 * PutEvents on the site's bus for one event source only. `events:source` is multivalued (one value per entry of the
 * request), so every value must match (ForAllValues), and the key must be there at all: ForAllValues alone would
 * also allow a request without it.
 */
const putEventsFrom = (sid: string, source: string): Grant => ({
  sid,
  actions: ['events:PutEvents'],
  resources: [logicalResource.eventBus],
  conditions: { 'ForAllValues:StringEquals': { 'events:source': [source] }, Null: { 'events:source': 'false' } },
});

export const FUNCTION_GRANTS: Record<FunctionName, readonly Grant[]> = {
  // Instances, meta-instances and tenant machine views; writes are conditional puts and transactions of puts.
  TenantApi: [
    // Query: an org's quota usage items (its capacity answer) and its capacity history, one partition each; a reported
    // machine's history (repair tickets).
    tableItems('GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem'),
    // members: a meta-instance that release 0.1.0 wrote, until the migration gave it memberIds (store/legacy-layout.ts).
    queries('allocatable', 'allocatableByDomain', 'byKind', 'byOrg', 'members', 'repairRequested'),
    idempotencyRecords,
  ],
  // The provider's routes: also the fleet's registration (BatchWriteItem of new machines), history and audit reads.
  AdminApi: [
    tableItems('GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'BatchWriteItem'),
    // byOrg: maintenance listed by state. allocatable, allocatableByDomain: a small reservation's free machines.
    queries('allocatable', 'allocatableByDomain', 'auditByActor', 'byKind', 'byOrg', 'eventsByDay', 'members', 'repairRequested', 'replacing'),
    idempotencyRecords,
  ],
  // Heartbeats (the roster time is one guarded UpdateItem) and cleanup reports: by key only, no index.
  SiteAgentApi: [tableItems('GetItem', 'BatchGetItem', 'PutItem', 'UpdateItem'), idempotencyRecords],
  // The reconcilers and the outbox: reads the stream (as its event source mapping does) and publishes repair events.
  StreamHandler: [
    // Query: an org's capacity-events feed, its last entry (one partition).
    tableItems('GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem'),
    queries('allocatable', 'allocatableByDomain', 'due', 'members', 'waiting'),
    { sid: 'ReadTableStream', actions: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'], resources: [logicalResource.stream] },
    // ListStreams has no resource-level permissions: `*` is the only resource it takes (AWS_ONLY_ACTIONS says why).
    { sid: 'ListTableStreams', actions: ['dynamodb:ListStreams'], resources: [logicalResource.any] },
    putEventsFrom('PutRepairEvents', EVENT_SOURCE),
  ],
  // Whatever is due, the fleet gauges, the counters' drift repairs, orgs' capacity points, its own follow-ups, and the
  // outbox events the stream left undelivered. And the data migrations: a Scan of the table, its item count for their
  // progress, and 0.1.0's items deleted by the contract (store/migrations).
  SweepHandler: [
    tableItems('GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem', 'Scan', 'DescribeTable'),
    queries('allocatable', 'allocatableByDomain', 'byKind', 'byOrg', 'due', 'eventsByDay', 'members', 'repairRequested', 'replacing', 'waiting'),
    putEventsFrom('PutSweepFollowUp', SWEEP_FOLLOW_UP.source),
    putEventsFrom('PutRepairEvents', EVENT_SOURCE),
  ],
};

/**
 * Granted actions that the local runner never calls, because only AWS does, on the function's behalf or with its
 * role: the IAM test accepts these grants unused. By action, whichever function has them.
 */
export const AWS_ONLY_ACTIONS: Record<string, string> = {
  'logs:CreateLogStream': "Lambda writes each function's output to its own log group; the local runner logs to stdout",
  'logs:PutLogEvents': "Lambda writes each function's output to its own log group; the local runner logs to stdout",
  'xray:PutTraceSegments': 'active tracing: Lambda and the Powertools tracer send segments to X-Ray; nothing is traced locally',
  'xray:PutTelemetryRecords': 'active tracing: the X-Ray daemon Lambda runs reports its telemetry; nothing is traced locally',
  'dynamodb:ListStreams':
    "Lambda's event source mapping finds the table's stream with the stream function's role; the local poller reads its ARN from DescribeTable",
  'sqs:SendMessage': "the stream mapping's on-failure destination: Lambda sends what it gave up on with the function's role; the poller sets it aside",
  'sqs:GetQueueAttributes': "the stream mapping's on-failure destination (CDK's SqsDlq grant): Lambda checks the queue with the function's role",
  'sqs:GetQueueUrl': "the stream mapping's on-failure destination (CDK's SqsDlq grant): Lambda finds the queue with the function's role",
  'secretsmanager:GetSecretValue':
    'the functions that call the site agent read its signing keys from Secrets Manager in AWS; the local runner makes its key per run and holds it in memory',
};
