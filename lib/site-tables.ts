import { RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, BillingMode, ProjectionType, StreamViewType, Table, type Attribute } from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import { idempotencyTableDefinition, tableDefinition } from '#store/table.ts';
import { SitePart } from './site-part.ts';

function attributeOf(definition: CreateTableCommandInput, name: string): Attribute {
  const declared = definition.AttributeDefinitions?.find((a) => a.AttributeName === name)?.AttributeType;
  const types: Record<string, AttributeType> = { S: AttributeType.STRING, N: AttributeType.NUMBER, B: AttributeType.BINARY };
  const type = declared ? types[declared] : undefined;
  if (!type) throw new Error(`table definition: attribute ${name} has no usable type (${declared})`);
  return { name, type };
}

function keysOf(definition: CreateTableCommandInput, schema: CreateTableCommandInput['KeySchema']) {
  const named = (keyType: 'HASH' | 'RANGE') => schema?.find((k) => k.KeyType === keyType)?.AttributeName;
  const hash = named('HASH');
  const range = named('RANGE');
  if (!hash) throw new Error('table definition: a key schema without a HASH key');
  return { partitionKey: attributeOf(definition, hash), ...(range ? { sortKey: attributeOf(definition, range) } : {}) };
}

const projections: Record<string, ProjectionType> = { ALL: ProjectionType.ALL, KEYS_ONLY: ProjectionType.KEYS_ONLY, INCLUDE: ProjectionType.INCLUDE };
const projectionOf = (type: string | undefined) => projections[type ?? 'ALL'] ?? ProjectionType.ALL;

function billingOf(definition: CreateTableCommandInput): BillingMode {
  if (definition.BillingMode !== 'PAY_PER_REQUEST') throw new Error(`table definition: expected on-demand billing, got ${definition.BillingMode}`);
  return BillingMode.PAY_PER_REQUEST;
}

/**
 * The site's data: the single table and the idempotency records' table, both built from the store's own definitions
 * (functions/store/table.ts), so that the local runner and AWS never drift.
 */
export class SiteTables extends SitePart {
  readonly table: Table;
  readonly idempotencyTable: Table;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    const definition = tableDefinition('unused');
    const streamView = definition.StreamSpecification?.StreamViewType;
    if (!definition.StreamSpecification?.StreamEnabled || !streamView) throw new Error('table definition: the stream must be enabled');
    this.table = new Table(this, 'Table', {
      ...keysOf(definition, definition.KeySchema),
      billingMode: billingOf(definition),
      stream: StreamViewType[streamView],
      // Orgs' capacity history points expire (domain/capacity/capacity-history.ts); no other item carries the attribute.
      timeToLiveAttribute: 'expiresAt',
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    for (const index of definition.GlobalSecondaryIndexes ?? []) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.IndexName!,
        ...keysOf(definition, index.KeySchema),
        projectionType: projectionOf(index.Projection?.ProjectionType),
        ...(index.Projection?.NonKeyAttributes ? { nonKeyAttributes: index.Projection.NonKeyAttributes } : {}),
      });
    }

    // Powertools idempotency records: 24 h replays, expired by TTL. Nothing in it outlives the API, so it goes
    // with the stack; point-in-time recovery stays on for the rare case of an accidental delete of records.
    const idempotency = idempotencyTableDefinition('unused');
    this.idempotencyTable = new Table(this, 'IdempotencyTable', {
      ...keysOf(idempotency, idempotency.KeySchema),
      billingMode: billingOf(idempotency),
      timeToLiveAttribute: 'expiration',
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      removalPolicy: RemovalPolicy.DESTROY,
    });
  }
}
