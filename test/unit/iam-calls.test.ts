import { describe, expect, it } from 'vitest';
import { iamCallsOf, type LocalResourceNames } from '#local/iam-calls.ts';

// How the AWS call recorder names a command's IAM authorizations (the Service Authorization Reference's rules).

const names: LocalResourceNames = { tables: { 'site-table': 'main', 'site-idem': 'idempotency' }, eventBusName: 'fleetward-x' };

describe('the IAM calls of a command', () => {
  it('expands a write transaction into each item’s own action on its table (there is no Transact* action)', () => {
    const input = {
      TransactItems: [
        { Put: { TableName: 'site-table' } },
        { Update: { TableName: 'site-table' } },
        { Delete: { TableName: 'site-idem' } },
        { ConditionCheck: { TableName: 'site-table' } },
      ],
    };
    expect(iamCallsOf('dynamodb', 'TransactWriteItems', input, names)).toEqual([
      { action: 'dynamodb:PutItem', resource: 'table/main' },
      { action: 'dynamodb:UpdateItem', resource: 'table/main' },
      { action: 'dynamodb:DeleteItem', resource: 'table/idempotency' },
      { action: 'dynamodb:ConditionCheckItem', resource: 'table/main' },
    ]);
    expect(iamCallsOf('dynamodb', 'TransactGetItems', { TransactItems: [{ Get: { TableName: 'site-table' } }] }, names)).toEqual([
      { action: 'dynamodb:GetItem', resource: 'table/main' },
    ]);
  });

  it('names a query of an index by the index, and a batch by each table it names', () => {
    expect(iamCallsOf('dynamodb', 'Query', { TableName: 'site-table', IndexName: 'byOrg' }, names)).toEqual([
      { action: 'dynamodb:Query', resource: 'table/main/index/byOrg' },
    ]);
    expect(iamCallsOf('dynamodb', 'Query', { TableName: 'site-table' }, names)).toEqual([{ action: 'dynamodb:Query', resource: 'table/main' }]);
    expect(iamCallsOf('dynamodb', 'BatchWriteItem', { RequestItems: { 'site-table': [], 'site-idem': [] } }, names)).toEqual([
      { action: 'dynamodb:BatchWriteItem', resource: 'table/main' },
      { action: 'dynamodb:BatchWriteItem', resource: 'table/idempotency' },
    ]);
  });

  it('marks a table that is not the site’s as unknown', () => {
    expect(iamCallsOf('dynamodb', 'GetItem', { TableName: 'elsewhere' }, names)).toEqual([{ action: 'dynamodb:GetItem', resource: 'unknown:table/elsewhere' }]);
  });

  it('puts stream reads on the stream, and ListStreams on * alone', () => {
    const streamArn = 'arn:aws:dynamodb:ddblocal:000000000000:table/site-table/stream/2024-01-01T00:00:00.000';
    const onStream = (action: string) => [{ action, resource: 'table/main/stream' }];
    expect(iamCallsOf('dynamodb-streams', 'DescribeStream', { StreamArn: streamArn }, names)).toEqual(onStream('dynamodb:DescribeStream'));
    // GetRecords names only a shard iterator: the poller's client reads the site's stream alone.
    expect(iamCallsOf('dynamodb-streams', 'GetRecords', { ShardIterator: 'opaque' }, names)).toEqual(onStream('dynamodb:GetRecords'));
    expect(iamCallsOf('dynamodb-streams', 'ListStreams', {}, names)).toEqual([{ action: 'dynamodb:ListStreams', resource: '*' }]);
  });

  it('authorizes PutEvents once per bus, with every source and detail type of its entries as multivalued keys', () => {
    const input = {
      Entries: [
        { EventBusName: 'fleetward-x', Source: 'b', DetailType: 'T1' },
        { EventBusName: 'arn:aws:events:eu-west-1:1:event-bus/fleetward-x', Source: 'a', DetailType: 'T1' },
        { Source: 'a', DetailType: 'T2' },
      ],
    };
    expect(iamCallsOf('eventbridge', 'PutEvents', input, names)).toEqual([
      { action: 'events:PutEvents', resource: 'event-bus/repair', context: { 'events:source': ['a', 'b'], 'events:detail-type': ['T1'] } },
      { action: 'events:PutEvents', resource: 'unknown:event-bus/default', context: { 'events:source': ['a'], 'events:detail-type': ['T2'] } },
    ]);
  });
});
