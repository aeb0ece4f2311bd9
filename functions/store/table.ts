import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';

/**
 * The single table's shape, shared by the local runner (CreateTable) and the CDK stack, so both always agree.
 * Every GSI is sparse: an item carries an index's key attributes only while it belongs in that index.
 *
 * An index that projects ALL is written whenever its items change at all; one that projects KEYS_ONLY only when an
 * item enters or leaves it. Every machine is in byKind and most are in allocatable, so those two hold keys only:
 * a machine's liveness flipping (a whole fleet's at once, when its agent restarts) writes no index, and a read of
 * them fetches the items by key (dynamo-items.ts).
 */
export const indexes = {
  /** Machines that can take an instance, by machine type and rack (pk `ALLOC#<type>#<rack>`, sk the machine id). */
  allocatable: { name: 'allocatable', pk: 'allocPk', sk: 'allocSk', projection: 'KEYS_ONLY' },
  /** Free machines that carry an NVLink domain, by type (pk `ALLOC-NVL#<type>`, sk `<domain>#<machine id>`): a domain reads alone. */
  allocatableByDomain: { name: 'allocatableByDomain', pk: 'allocNvlPk', sk: 'allocNvlSk', projection: 'KEYS_ONLY' },
  /** Everything of one kind (TENANT, META, AUDIT; machines by rack, `MACHINE#<rack>`), for provider listings: pk kind, sk id (or time#id). */
  byKind: { name: 'byKind', pk: 'kind', sk: 'kindSk', projection: 'KEYS_ONLY' },
  /** A tenant org's instances, newest first by createdAt. */
  byOrg: { name: 'byOrg', pk: 'orgPk', sk: 'orgSk', projection: 'ALL' },
  /**
   * The sweep's work queue: items with something due at `dueAt`, spread over shards (pk `DUE#<nn>`, aggregates/due.ts
   * `duePartitionOf`). The sweep reads its keys only and re-reads each record it redelivers, so KEYS_ONLY would do and
   * would spare the index an item's other changes; but release 0.1.0 projects ALL, and a changed projection is a
   * delete and a create of the index: two of the one index change a stack update may make (docs/design.md,
   * "Upgrades"). It moves in a release of its own, as a new index beside this one.
   */
  due: { name: 'due', pk: 'duePk', sk: 'dueAt', projection: 'ALL' },
  /** Machines carrying a `repair-request`, oldest request first: what repair tenants claim, and stuck repairs. */
  repairRequested: { name: 'repairRequested', pk: 'repairPk', sk: 'repairSince', projection: 'ALL' },
  /** Meta-instances waiting for machines, by type (pk `WAIT#<type>`): a machine freed up wakes them. */
  waiting: { name: 'waiting', pk: 'waitPk', sk: 'waitSk', projection: 'ALL' },
  /** Meta-instance replacements still provisioning (pk `REPLACING`): what the site-wide cap counts. */
  replacing: { name: 'replacing', pk: 'replacingPk', sk: 'replacingSk', projection: 'ALL' },
  /**
   * Release 0.1.0's membership index (pk `META#<id>` on a member instance). Nothing reads it since membership moved onto
   * the meta-instance (`memberIds`) but the migration from 0.1.0, which fills `memberIds` from it; it goes in a later
   * release, one index change of its own, after the contract migration has taken `memberOf` off every instance.
   */
  members: { name: 'members', pk: 'memberOf', sk: 'memberSk', projection: 'ALL' },
  /** Audit entries by actor (pk `ACTOR#<sub>`, sk `<at>#<unique>`): `GET /admin/audit?actor=` is one Query. */
  auditByActor: { name: 'auditByActor', pk: 'actorPk', sk: 'actorSk', projection: 'ALL' },
  /** History entries carrying an event, by UTC day (pk `EVENTS#<yyyy-mm-dd>`, sk at): repair stats read a day per Query. */
  eventsByDay: { name: 'eventsByDay', pk: 'eventDayPk', sk: 'eventDaySk', projection: 'ALL' },
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
      Projection: { ProjectionType: index.projection },
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
