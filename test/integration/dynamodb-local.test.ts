import { DescribeStreamCommand, DynamoDBStreamsClient, GetRecordsCommand, GetShardIteratorCommand, ListStreamsCommand } from '@aws-sdk/client-dynamodb-streams';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { jitCompilerCpuMs } from '../../bench/jvm-compiler.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from '#local/dynamodb-local.ts';
import { createTables } from '#local/tables.ts';
import { createDocumentClient } from '#store/client.ts';

let dynamo: DynamoDbLocal | undefined;
afterAll(async () => dynamo?.stop());

/** The `sk` of every stream record of `table`'s stream, oldest first, read from its first shard. */
async function streamedKeys(streams: DynamoDBStreamsClient, table: string): Promise<string[]> {
  const arn = (await streams.send(new ListStreamsCommand({ TableName: table }))).Streams![0]!.StreamArn!;
  const shard = (await streams.send(new DescribeStreamCommand({ StreamArn: arn }))).StreamDescription!.Shards![0]!.ShardId!;
  const iterator = (await streams.send(new GetShardIteratorCommand({ StreamArn: arn, ShardId: shard, ShardIteratorType: 'TRIM_HORIZON' }))).ShardIterator!;
  const { Records = [] } = await streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
  return Records.map((record) => record.dynamodb!.Keys!.sk!.S!);
}

describe('DynamoDB Local with its stream log indexed', () => {
  it('keeps its data in a folder of its own, serves each table its own stream records, and removes the folder at stop', { timeout: 60_000 }, async () => {
    dynamo = await startDynamoDbLocal({ indexStreamLog: true });
    expect(dynamo.streamLogIndexed).toBe(true);
    const folder = dynamo.folder!;
    expect(existsSync(folder)).toBe(true);

    const documents = createDocumentClient(dynamo.endpoint);
    const streams = new DynamoDBStreamsClient({ endpoint: dynamo.endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    // The second table's records come after the first's: the lookups the indexes serve must still find each stream's own.
    for (const table of ['first', 'second']) {
      await createTables(dynamo.endpoint, { table, idempotencyTable: `${table}-idempotency` });
      for (const n of [1, 2, 3])
        await documents.send(new PutCommand({ TableName: table, Item: { pk: 'probe', sk: `${table}-${n}` }, ConditionExpression: 'attribute_not_exists(pk)' }));
    }
    expect(await streamedKeys(streams, 'first')).toEqual(['first-1', 'first-2', 'first-3']);
    expect(await streamedKeys(streams, 'second')).toEqual(['second-1', 'second-2', 'second-3']);
    if (existsSync('/proc/self/stat')) {
      // Its process is known, and a JVM that has served requests has spent time compiling them.
      expect(readFileSync(`/proc/${dynamo.javaPid}/comm`, 'utf8').trim()).toBe('java');
      expect(jitCompilerCpuMs(dynamo.javaPid)).toBeGreaterThan(0);
    }
    streams.destroy();
    documents.destroy();

    await dynamo.stop();
    dynamo = undefined;
    expect(existsSync(folder)).toBe(false);
  });
});
