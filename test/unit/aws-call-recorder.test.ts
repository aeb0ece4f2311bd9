import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { createAwsCallRecorder } from '#local/aws-call-recorder.ts';
import { runAsFunction } from '#local/function-scope.ts';

// The recorder writes each distinct call of a function once, synchronously, before the call goes out.

/** A document client that never reaches the network: every command fails right after the recorder saw it. */
function offlineClient() {
  const client = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'local', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } }));
  client.middlewareStack.add(() => async () => Promise.reject(new Error('offline')), { step: 'initialize', priority: 'low', name: 'offline' });
  return client;
}

const linesIn = (dir: string) =>
  readdirSync(dir).flatMap((file) =>
    readFileSync(join(dir, file), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line)),
  );

describe('the AWS call recorder', () => {
  it('records what a function sends, once per distinct call, already written when the call is sent', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'aws-calls-'));
    const client = offlineClient();
    createAwsCallRecorder(dir, { tables: { things: 'main' }, eventBusName: 'bus' }).instrument(client, 'dynamodb');
    await runAsFunction('TenantApi', async () => {
      const failed = await client.send(new GetCommand({ TableName: 'things', Key: { pk: 'a' } })).catch((error: Error) => error.message);
      // The call failed (as a SIGKILL might end it), and its record is on disk all the same.
      expect(failed).toBe('offline');
      expect(linesIn(dir)).toEqual([{ function: 'TenantApi', action: 'dynamodb:GetItem', resource: 'table/main' }]);
      await client.send(new GetCommand({ TableName: 'things', Key: { pk: 'b' } })).catch(() => {});
      await client.send(new QueryCommand({ TableName: 'things', IndexName: 'byOrg', KeyConditionExpression: 'x = :x' })).catch(() => {});
    });
    const transaction = new TransactWriteCommand({ TransactItems: [{ Put: { TableName: 'things', Item: { pk: 'c' } } }] });
    await runAsFunction('SweepHandler', () => client.send(transaction).catch(() => {}));
    expect(linesIn(dir)).toEqual([
      { function: 'TenantApi', action: 'dynamodb:GetItem', resource: 'table/main' },
      { function: 'TenantApi', action: 'dynamodb:Query', resource: 'table/main/index/byOrg' },
      { function: 'SweepHandler', action: 'dynamodb:PutItem', resource: 'table/main' },
    ]);
  });

  it('leaves out calls made outside any function', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'aws-calls-'));
    const client = offlineClient();
    createAwsCallRecorder(dir, { tables: { things: 'main' }, eventBusName: 'bus' }).instrument(client, 'dynamodb');
    await client.send(new GetCommand({ TableName: 'things', Key: { pk: 'a' } })).catch(() => {});
    expect(linesIn(dir)).toEqual([]);
  });
});
