import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';

/**
 * The single table's shape, shared by the local runner (CreateTable) and the CDK stack, so both always agree.
 * Every GSI is sparse: an item carries an index's key attributes only while it belongs in that index.
 */
export const indexes = {
  /** Machines that can take an instance, by machine type (pk `ALLOC#<type>`, sk `<rack>#<machine id>`). */
  allocatable: { name: 'allocatable', pk: 'allocPk', sk: 'allocSk' },
  /** Everything of one kind (MACHINE, TENANT, META, AUDIT), for provider listings: pk kind, sk id (or time#id). */
  byKind: { name: 'byKind', pk: 'kind', sk: 'kindSk' },
  /** A tenant org's instances, newest first by createdAt. */
  byOrg: { name: 'byOrg', pk: 'orgPk', sk: 'orgSk' },
  /** The sweep's work queue: items with something due at `dueAt` (pk `DUE`). */
  due: { name: 'due', pk: 'duePk', sk: 'dueAt' },
  /** Machines carrying a `repair-request`, oldest request first: what repair tenants claim, and stuck repairs. */
  repairRequested: { name: 'repairRequested', pk: 'repairPk', sk: 'repairSince' },
  /** A meta-instance's members: instances carrying its id (pk `META#<id>`). The binding lives on the instance. */
  members: { name: 'members', pk: 'memberOf', sk: 'memberSk' },
  /** Meta-instances waiting for machines, by type (pk `WAIT#<type>`): a machine freed up wakes them. */
  waiting: { name: 'waiting', pk: 'waitPk', sk: 'waitSk' },
  /** Meta-instance replacements still provisioning (pk `REPLACING`): what the site-wide cap counts. */
  replacing: { name: 'replacing', pk: 'replacingPk', sk: 'replacingSk' },
  /** Audit entries by actor (pk `ACTOR#<sub>`, sk `<at>#<unique>`): `GET /admin/audit?actor=` is one Query. */
  auditByActor: { name: 'auditByActor', pk: 'actorPk', sk: 'actorSk' },
  /** History entries carrying an event, by UTC day (pk `EVENTS#<yyyy-mm-dd>`, sk at): repair stats read a day per Query. */
  eventsByDay: { name: 'eventsByDay', pk: 'eventDayPk', sk: 'eventDaySk' },
} as const;

export function tableDefinition(tableName: string): CreateTableCommandInput {
  const keyAttributes = new Set<string>(['pk', 'sk']);
  for (const index of Object.values(indexes)) {
    keyAttributes.add(index.pk);
    keyAttributes.add(index.sk);
  }
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [...keyAttributes].map((name) => ({ AttributeName: name, AttributeType: 'S' })),
    KeySchema: [
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: Object.values(indexes).map((index) => ({
      IndexName: index.name,
      KeySchema: [
        { AttributeName: index.pk, KeyType: 'HASH' },
        { AttributeName: index.sk, KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: 'ALL' },
    })),
    StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
  };
}

/** Powertools idempotency records live in their own small table (pk `id`), as Powertools expects. */
export function idempotencyTableDefinition(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
  };
}
