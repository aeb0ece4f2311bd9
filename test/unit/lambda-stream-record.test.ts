import type { AttributeValue } from '@aws-sdk/client-dynamodb-streams';
import { describe, expect, it } from 'vitest';
import { toLambdaRecord } from '#local/lambda-stream-record.ts';

const arn = 'arn:aws:dynamodb:local:000000000000:table/site/stream/2026-11-26T00:00:00.000';

describe('toLambdaRecord', () => {
  it('gives a record as Lambda delivers it: epoch seconds, base64 binaries, the stream as its source', () => {
    const record = toLambdaRecord(
      {
        eventID: 'e1',
        eventName: 'MODIFY',
        eventVersion: '1.1',
        awsRegion: 'ddblocal',
        dynamodb: {
          ApproximateCreationDateTime: new Date('2026-11-26T10:00:00.900Z'),
          Keys: { pk: { S: 'MACHINE#m1' }, sk: { S: '#MACHINE' } },
          NewImage: {
            version: { N: '2' },
            blob: { B: new Uint8Array([1, 2, 255]) },
            tags: { SS: ['a', 'b'] },
            nested: { L: [{ BOOL: true }, { M: { x: { NULL: true } } }] },
          },
          OldImage: { version: { N: '1' } },
          SequenceNumber: '000042',
          SizeBytes: 120,
          StreamViewType: 'NEW_AND_OLD_IMAGES',
        },
        userIdentity: { Type: 'Service', PrincipalId: 'dynamodb.amazonaws.com' },
      },
      arn,
      'us-east-1',
    );
    expect(record).toEqual({
      eventID: 'e1',
      eventName: 'MODIFY',
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: 'us-east-1',
      eventSourceARN: arn,
      dynamodb: {
        ApproximateCreationDateTime: 1795687200,
        Keys: { pk: { S: 'MACHINE#m1' }, sk: { S: '#MACHINE' } },
        NewImage: { version: { N: '2' }, blob: { B: 'AQL/' }, tags: { SS: ['a', 'b'] }, nested: { L: [{ BOOL: true }, { M: { x: { NULL: true } } }] } },
        OldImage: { version: { N: '1' } },
        SequenceNumber: '000042',
        SizeBytes: 120,
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
      userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' },
    });
  });

  it("reads DynamoDB Local's empty map (`{}` in its stream images) as an empty map", () => {
    const record = toLambdaRecord({ eventName: 'INSERT', dynamodb: { NewImage: { labels: {} as AttributeValue } } }, arn);
    expect(record.dynamodb?.NewImage).toEqual({ labels: { M: {} } });
  });

  it('refuses an attribute value of a type it does not know', () => {
    expect(() => toLambdaRecord({ dynamodb: { NewImage: { odd: { $unknown: ['X', 1] } as never } } }, arn)).toThrow(/unknown attribute value type/);
  });
});
