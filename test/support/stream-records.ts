import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient, GetRecordsCommand, GetShardIteratorCommand } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord } from 'aws-lambda';
import { toLambdaRecord } from '#local/lambda-stream-record.ts';

/** Every record a table's stream holds so far, from every shard, exactly as the poller hands them to the handler. */
export async function streamRecords(endpoint: string, tableName: string): Promise<DynamoDBRecord[]> {
  const clientConfig = { endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };
  const dynamo = new DynamoDBClient(clientConfig);
  const streams = new DynamoDBStreamsClient(clientConfig);
  try {
    const { Table } = await dynamo.send(new DescribeTableCommand({ TableName: tableName }));
    const arn = Table!.LatestStreamArn!;
    const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: arn }));
    const out: DynamoDBRecord[] = [];
    for (const shard of StreamDescription?.Shards ?? []) {
      let iterator = (await streams.send(new GetShardIteratorCommand({ StreamArn: arn, ShardId: shard.ShardId!, ShardIteratorType: 'TRIM_HORIZON' })))
        .ShardIterator;
      while (iterator) {
        const page = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
        out.push(...(page.Records ?? []).map((record) => toLambdaRecord(record, arn)));
        if ((page.Records ?? []).length === 0) break;
        iterator = page.NextShardIterator;
      }
    }
    return out;
  } finally {
    dynamo.destroy();
    streams.destroy();
  }
}
