/**
 * What a deploy cannot change freely, read from a synthesized CloudFormation template: each table's key schema,
 * indexes (keys and projections) and stream view type, and each retained resource's properties whose change makes
 * CloudFormation replace it. One record per release lives in releases/<version>.json; the next release's template is
 * checked against it (upgrade-rules.ts).
 */

export interface KeyRecord {
  hash: string;
  range?: string;
}

export interface IndexRecord {
  keys: KeyRecord;
  projection: { type: string; nonKeyAttributes?: string[] };
}

export interface TableRecord {
  keySchema: KeyRecord;
  globalSecondaryIndexes: Record<string, IndexRecord>;
  localSecondaryIndexes: Record<string, IndexRecord>;
  streamViewType: string | null;
}

export interface RetainedRecord {
  type: string;
  /** The properties of REPLACING_PROPERTIES[type] the template sets; absent ones are CloudFormation's defaults. */
  replacing: Record<string, unknown>;
}

export interface ReleaseRecord {
  release: string;
  /** Where the record was read from: the commit and site whose template it is. */
  source: string;
  tables: Record<string, TableRecord>;
  retained: Record<string, RetainedRecord>;
}

/**
 * Properties whose update CloudFormation's resource reference marks "Replacement", for the resource types this stack
 * retains or keys data in. A type not listed here cannot be checked, and a retained resource of such a type is
 * refused by upgrade-rules.ts until it is listed.
 */
export const REPLACING_PROPERTIES: Record<string, readonly string[]> = {
  'AWS::DynamoDB::Table': ['TableName', 'KeySchema', 'LocalSecondaryIndexes', 'ImportSourceSpecification'],
  'AWS::Logs::LogGroup': ['LogGroupName', 'LogGroupClass'],
  'AWS::S3::Bucket': ['BucketName', 'ObjectLockEnabled'],
};

type CfnResource = { Type: string; Properties?: Record<string, unknown>; DeletionPolicy?: string; UpdateReplacePolicy?: string };
type CfnKey = { AttributeName: string; KeyType: 'HASH' | 'RANGE' };
type CfnIndex = { IndexName: string; KeySchema: CfnKey[]; Projection?: { ProjectionType?: string; NonKeyAttributes?: string[] } };

const keysOf = (schema: CfnKey[]): KeyRecord => {
  const hash = schema.find((key) => key.KeyType === 'HASH')?.AttributeName;
  const range = schema.find((key) => key.KeyType === 'RANGE')?.AttributeName;
  if (!hash) throw new Error('a key schema without a HASH key');
  return { hash, ...(range ? { range } : {}) };
};

const indexesOf = (indexes: CfnIndex[] | undefined): Record<string, IndexRecord> =>
  Object.fromEntries(
    [...(indexes ?? [])]
      .sort((a, b) => a.IndexName.localeCompare(b.IndexName))
      .map((index) => [
        index.IndexName,
        {
          keys: keysOf(index.KeySchema),
          projection: {
            type: index.Projection?.ProjectionType ?? 'ALL',
            ...(index.Projection?.NonKeyAttributes ? { nonKeyAttributes: [...index.Projection.NonKeyAttributes].sort() } : {}),
          },
        },
      ]),
  );

const isRetained = (resource: CfnResource) => resource.DeletionPolicy === 'Retain' || resource.DeletionPolicy === 'RetainExceptOnCreate';

export function releaseRecordOf(template: { Resources?: Record<string, CfnResource> }, release: string, source: string): ReleaseRecord {
  const tables: Record<string, TableRecord> = {};
  const retained: Record<string, RetainedRecord> = {};
  for (const [logicalId, resource] of Object.entries(template.Resources ?? {}).sort(([a], [b]) => a.localeCompare(b))) {
    const properties = resource.Properties ?? {};
    if (resource.Type === 'AWS::DynamoDB::Table') {
      const stream = properties.StreamSpecification as { StreamViewType?: string } | undefined;
      tables[logicalId] = {
        keySchema: keysOf(properties.KeySchema as CfnKey[]),
        globalSecondaryIndexes: indexesOf(properties.GlobalSecondaryIndexes as CfnIndex[] | undefined),
        localSecondaryIndexes: indexesOf(properties.LocalSecondaryIndexes as CfnIndex[] | undefined),
        streamViewType: stream?.StreamViewType ?? null,
      };
    }
    if (isRetained(resource)) {
      const names = REPLACING_PROPERTIES[resource.Type] ?? [];
      retained[logicalId] = {
        type: resource.Type,
        replacing: Object.fromEntries(names.filter((name) => properties[name] !== undefined).map((name) => [name, properties[name]])),
      };
    }
  }
  return { release, source, tables, retained };
}
