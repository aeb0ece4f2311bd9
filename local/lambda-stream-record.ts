import type { AttributeValue as SdkAttributeValue, _Record as SdkRecord } from '@aws-sdk/client-dynamodb-streams';
import type { AttributeValue, DynamoDBRecord } from 'aws-lambda';

// DynamoDB Streams' records as the SDK reads them, turned into what Lambda's event source mapping hands a function.

/** A record as Lambda delivers it: plain JSON, epoch seconds, base64 binaries, the stream ARN as its source. */
export function toLambdaRecord(record: SdkRecord, eventSourceARN: string, awsRegion?: string): DynamoDBRecord {
  const source = record.dynamodb ?? {};
  const dynamodb: NonNullable<DynamoDBRecord['dynamodb']> = {};
  if (source.ApproximateCreationDateTime) {
    dynamodb.ApproximateCreationDateTime = Math.floor(source.ApproximateCreationDateTime.getTime() / 1000);
  }
  if (source.Keys) dynamodb.Keys = toImage(source.Keys);
  if (source.NewImage) dynamodb.NewImage = toImage(source.NewImage);
  if (source.OldImage) dynamodb.OldImage = toImage(source.OldImage);
  if (source.SequenceNumber !== undefined) dynamodb.SequenceNumber = source.SequenceNumber;
  if (source.SizeBytes !== undefined) dynamodb.SizeBytes = source.SizeBytes;
  if (source.StreamViewType) dynamodb.StreamViewType = source.StreamViewType;
  const out: DynamoDBRecord = {
    eventID: record.eventID,
    eventName: record.eventName,
    eventVersion: record.eventVersion,
    eventSource: 'aws:dynamodb',
    awsRegion: awsRegion ?? record.awsRegion,
    dynamodb,
    eventSourceARN,
  };
  if (record.userIdentity) {
    out.userIdentity = { type: record.userIdentity.Type, principalId: record.userIdentity.PrincipalId };
  }
  return out;
}

function toImage(image: Record<string, SdkAttributeValue>): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const [name, value] of Object.entries(image)) out[name] = toAttributeValue(value);
  return out;
}

function toAttributeValue(value: SdkAttributeValue): AttributeValue {
  if (value.S !== undefined) return { S: value.S };
  if (value.N !== undefined) return { N: value.N };
  if (value.B !== undefined) return { B: base64(value.B) };
  if (value.BOOL !== undefined) return { BOOL: value.BOOL };
  if (value.NULL !== undefined) return { NULL: value.NULL };
  if (value.SS !== undefined) return { SS: [...value.SS] };
  if (value.NS !== undefined) return { NS: [...value.NS] };
  if (value.BS !== undefined) return { BS: value.BS.map(base64) };
  if (value.L !== undefined) return { L: value.L.map(toAttributeValue) };
  if (value.M !== undefined) return { M: toImage(value.M) };
  // DynamoDB Local writes an empty map into stream images as `{}` instead of `{ "M": {} }`.
  if (Object.keys(value).length === 0) return { M: {} };
  throw new Error(`unknown attribute value type: ${Object.keys(value).join(',')}`);
}

function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64');
}
