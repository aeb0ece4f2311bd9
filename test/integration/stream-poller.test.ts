import { DeleteTableCommand, DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { createTables } from '#local/tables.ts';
import { createStreamPoller, type StreamPoller, type StreamPollerOptions } from '#local/stream-poller.ts';
import { freshTables } from '#test/support/tables.ts';

type Handler = StreamPollerOptions['handler'];

const pollers: StreamPoller[] = [];
afterEach(async () => {
  await Promise.all(pollers.splice(0).map((p) => p.stop()));
});

async function setup(handler: Handler, options: Partial<StreamPollerOptions> = {}) {
  const tables = await freshTables('poller');
  const lines: string[] = [];
  const poller = createStreamPoller({
    endpoint: tables.endpoint,
    tableName: tables.names.table,
    handler,
    pollIntervalMs: 20,
    retryDelayMs: 10,
    log: (line) => lines.push(line),
    ...options,
  });
  pollers.push(poller);
  const put = (sk: string, extra: Record<string, unknown> = {}) =>
    tables.client.send(new PutCommand({ TableName: tables.names.table, Item: { pk: 'item', sk, ...extra } }));
  // One request, so the poller's first read sees all of them in one batch.
  const putAll = (sks: string[]) =>
    tables.client.send(
      new BatchWriteCommand({
        RequestItems: { [tables.names.table]: sks.map((sk) => ({ PutRequest: { Item: { pk: 'item', sk } } })) },
      }),
    );
  return { ...tables, poller, lines, put, putAll };
}

const sk = (record: DynamoDBRecord) => record.dynamodb!.Keys!.sk!.S!;
const seq = (record: DynamoDBRecord) => record.dynamodb!.SequenceNumber!;

/** A handler that records every batch it sees (by sort key) and fails whatever `fails` says. */
function recording(fails: (record: DynamoDBRecord, call: number) => boolean, mode: 'report' | 'throw' = 'report') {
  const calls: string[][] = [];
  const handler = async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
    calls.push(event.Records.map(sk));
    const failed = event.Records.filter((r) => fails(r, calls.length));
    if (mode === 'throw' && failed.length > 0) throw new Error(`cannot handle ${failed.map(sk).join(',')}`);
    return { batchItemFailures: failed.map((r) => ({ itemIdentifier: seq(r) })) };
  };
  return { calls, handler };
}

describe('stream poller on DynamoDB Local', () => {
  it("delivers records in Lambda's shape", async () => {
    const seen: DynamoDBRecord[] = [];
    const { poller, client, endpoint, names, put } = await setup(async (event) => {
      seen.push(...event.Records);
    });
    await poller.start();
    expect(poller.running()).toBe(true);

    await put('a', { n: 1, bin: new Uint8Array([1, 2, 3]), tags: new Set(['x']), nested: { list: [true, null] } });
    await client.send(
      new UpdateCommand({
        TableName: names.table,
        Key: { pk: 'item', sk: 'a' },
        UpdateExpression: 'SET n = :n',
        ExpressionAttributeValues: { ':n': 2 },
      }),
    );
    await client.send(new DeleteCommand({ TableName: names.table, Key: { pk: 'item', sk: 'a' } }));
    await poller.whenIdle();

    const dynamo = new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'l', secretAccessKey: 'l' } });
    const { Table } = await dynamo.send(new DescribeTableCommand({ TableName: names.table }));
    dynamo.destroy();

    expect(seen.map((r) => r.eventName)).toEqual(['INSERT', 'MODIFY', 'REMOVE']);
    const nowSeconds = Date.now() / 1000;
    for (const record of seen) {
      expect(record).toMatchObject({
        eventSource: 'aws:dynamodb',
        eventVersion: expect.any(String),
        eventID: expect.any(String),
        awsRegion: expect.any(String),
        eventSourceARN: Table!.LatestStreamArn,
      });
      const stream = record.dynamodb!;
      expect(stream.Keys).toEqual({ pk: { S: 'item' }, sk: { S: 'a' } });
      expect(stream.StreamViewType).toBe('NEW_AND_OLD_IMAGES');
      expect(stream.SequenceNumber).toMatch(/^\d+$/);
      expect(stream.SizeBytes).toBeGreaterThan(0);
      expect(Number.isInteger(stream.ApproximateCreationDateTime)).toBe(true);
      // DynamoDB Local rounds the creation time down to the minute.
      expect(stream.ApproximateCreationDateTime).toBeGreaterThan(nowSeconds - 120);
      expect(stream.ApproximateCreationDateTime).toBeLessThanOrEqual(nowSeconds + 5);
      // Plain JSON, as Lambda hands it over: no Dates, no byte arrays.
      expect(JSON.parse(JSON.stringify(record))).toEqual(record);
    }
    const [insert, modify, remove] = seen;
    expect(insert!.dynamodb).not.toHaveProperty('OldImage');
    expect(insert!.dynamodb!.NewImage).toEqual({
      pk: { S: 'item' },
      sk: { S: 'a' },
      n: { N: '1' },
      bin: { B: 'AQID' },
      tags: { SS: ['x'] },
      nested: { M: { list: { L: [{ BOOL: true }, { NULL: true }] } } },
    });
    expect(modify!.dynamodb!.OldImage!.n).toEqual({ N: '1' });
    expect(modify!.dynamodb!.NewImage!.n).toEqual({ N: '2' });
    expect(remove!.dynamodb).not.toHaveProperty('NewImage');
    expect(remove!.dynamodb!.OldImage!.n).toEqual({ N: '2' });
    expect(poller.stats()).toMatchObject({ delivered: 3, setAside: 0, retries: 0 });
  });

  it('redelivers from a reported batch item failure and not before it', async () => {
    const { calls, handler } = recording((record, call) => call === 1 && sk(record) === '3');
    const { poller, putAll } = await setup(handler);
    await putAll(['1', '2', '3', '4', '5']);
    await poller.start();
    await poller.whenIdle();

    expect(calls).toEqual([
      ['1', '2', '3', '4', '5'],
      ['3', '4', '5'],
    ]);
    expect(poller.stats()).toMatchObject({ delivered: 5, retries: 1, setAside: 0, invocations: 2 });
  });

  it('sets aside a record that keeps failing after maxRetries + 1 attempts and moves on', async () => {
    const { calls, handler } = recording((record) => sk(record) === '3');
    const { poller, putAll, put, lines } = await setup(handler, { maxRetries: 2 });
    await putAll(['1', '2', '3', '4', '5']);
    await poller.start();
    await poller.whenIdle();

    expect(calls).toEqual([
      ['1', '2', '3', '4', '5'],
      ['3', '4', '5'],
      ['3', '4', '5'],
      ['4', '5'],
    ]);
    const [aside, ...more] = poller.setAside();
    expect(more).toEqual([]);
    expect(sk(aside!.record)).toBe('3');
    expect(aside!.attempts).toBe(3);
    expect(aside!.record.eventSourceARN).toMatch(/stream/);
    expect(poller.stats()).toMatchObject({ delivered: 4, setAside: 1, retries: 2 });
    expect(lines.filter((l) => l.includes('SET ASIDE'))).toHaveLength(1);
    expect(lines.find((l) => l.includes('SET ASIDE'))).toMatch(/sk=3 .*after 3 attempts/);

    // The shard is not blocked: later writes still arrive.
    await put('6');
    await poller.whenIdle();
    expect(calls.at(-1)).toEqual(['6']);
    expect(poller.stats().delivered).toBe(5);
  });

  it('isolates the record that makes the handler throw and delivers the rest once', async () => {
    const { calls, handler } = recording((record) => sk(record) === '4', 'throw');
    const { poller, putAll } = await setup(handler, { maxRetries: 1 });
    await putAll(['1', '2', '3', '4', '5', '6']);
    await poller.start();
    await poller.whenIdle();

    const acknowledged = calls.filter((batch) => !batch.includes('4')).flat();
    expect(acknowledged.sort()).toEqual(['1', '2', '3', '5', '6']);
    expect(calls.filter((batch) => batch.length === 1 && batch[0] === '4')).toHaveLength(2);
    const [aside] = poller.setAside();
    expect(sk(aside!.record)).toBe('4');
    expect(aside!.attempts).toBe(2);
    expect(aside!.error).toMatch(/cannot handle 4/);
    expect(poller.stats()).toMatchObject({ delivered: 5, setAside: 1 });
  });

  it('starts after what is already there with startAt LATEST', async () => {
    const { calls, handler } = recording(() => false);
    const { poller, put } = await setup(handler, { startAt: 'LATEST' });
    await put('before');
    await poller.start();
    await put('after');
    await poller.whenIdle();
    expect(calls).toEqual([['after']]);
  });

  it('stop waits for the handler in flight and leaves nothing running', async () => {
    const timersBefore = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inHandler = new Promise<void>((r) => (entered = r));
    let finished = false;
    const { poller, put } = await setup(async () => {
      entered();
      await gate;
      finished = true;
    });
    await poller.start();
    await put('a');
    await inHandler;

    let stopped = false;
    const stopping = poller.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(finished).toBe(true);
    expect(poller.running()).toBe(false);
    expect(poller.stats().delivered).toBe(1);
    const timersAfter = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    expect(timersAfter).toBeLessThanOrEqual(timersBefore);
    await expect(poller.whenIdle()).rejects.toThrow(/not running/);
  });

  it('keeps running through SDK errors and follows the stream of a re-created table', async () => {
    const { calls, handler } = recording(() => false);
    const { poller, put, endpoint, names, lines } = await setup(handler, { shardRefreshMs: 30 });
    await poller.start();
    await put('old');
    await poller.whenIdle();

    const dynamo = new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'l', secretAccessKey: 'l' } });
    await dynamo.send(new DeleteTableCommand({ TableName: names.table }));
    await expect.poll(() => poller.stats().lastError, { timeout: 5000 }).toMatch(/ResourceNotFound|no stream/);
    expect(poller.running()).toBe(true);
    expect(lines.some((l) => l.includes('failed, retrying'))).toBe(true);

    await createTables(endpoint, names);
    dynamo.destroy();
    await put('new');
    await expect.poll(() => calls.flat(), { timeout: 10_000 }).toEqual(['old', 'new']);
    expect(poller.running()).toBe(true);
  });

  it('under chaos, delivers every record at least twice and whenIdle waits for the late ones', async () => {
    const { calls, handler } = recording(() => false);
    const { poller, putAll, lines } = await setup(handler, { chaos: { modes: ['duplicate', 'reorder', 'delay'], seed: 11 } });
    await poller.start();
    expect(lines.some((l) => l.includes('CHAOS duplicate,reorder,delay with seed 11'))).toBe(true);
    await putAll(['1', '2', '3', '4', '5', '6']);
    await poller.whenIdle();

    const counts = new Map<string, number>();
    for (const key of calls.flat()) counts.set(key, (counts.get(key) ?? 0) + 1);
    expect([...counts.keys()].sort()).toEqual(['1', '2', '3', '4', '5', '6']);
    expect([...counts.values()].every((n) => n >= 2)).toBe(true);
    expect(poller.stats()).toMatchObject({ delivered: 12, setAside: 0 });
  });

  it('refuses to start on a table without a stream', async () => {
    const { endpoint, names } = await freshTables('poller');
    const poller = createStreamPoller({
      endpoint,
      tableName: names.idempotencyTable,
      handler: async () => {},
      log: () => {},
    });
    await expect(poller.start()).rejects.toThrow(/no stream/);
    expect(poller.running()).toBe(false);
  });
});
