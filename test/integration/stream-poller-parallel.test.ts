import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { STREAM_BATCH_SIZE, streamMappingSettings } from '#lib/stream-mapping.ts';
import { pollerSettingsOf } from '#local/aws-semantics/parallel-shards.ts';
import { invokeFunction } from '#local/lambda-invocation.ts';
import { auditedStreamFilter } from '#local/stream-filter-audit.ts';
import { createStreamPoller, type StreamPoller, type StreamPollerOptions } from '#local/stream-poller.ts';
import { freshTables } from '#test/support/tables.ts';

// The poller under FLEETWARD_AWS_SEMANTICS=parallel-shards, on DynamoDB Local's real stream: set up from the
// stack's event source mapping, as the local runner sets it up in that mode.

// The stack's mapping, which test/cdk/stack-settings.test.ts holds equal to the synthesized template's.
const mapping = streamMappingSettings();

const pollers: StreamPoller[] = [];
afterEach(async () => {
  await Promise.all(pollers.splice(0).map((p) => p.stop()));
});

/** Items the stack's filters let through: machine records, `MACHINE#<id>` / `#MACHINE`. */
const machineItem = (id: string, n: number) => ({ pk: `MACHINE#${id}`, sk: '#MACHINE', n });

async function setup(handler: StreamPollerOptions['handler'], options: Partial<StreamPollerOptions> = {}) {
  const tables = await freshTables('lanes');
  const lines: string[] = [];
  const poller = createStreamPoller({
    endpoint: tables.endpoint,
    tableName: tables.names.table,
    handler,
    pollIntervalMs: 20,
    ...pollerSettingsOf(mapping, { parallelShards: true }),
    filter: auditedStreamFilter(mapping.filterPatterns).filter,
    retryDelayMs: 1,
    log: (line) => lines.push(line),
    ...options,
  });
  pollers.push(poller);
  const write = (items: Array<Record<string, unknown>>) =>
    tables.client.send(new BatchWriteCommand({ RequestItems: { [tables.names.table]: items.map((Item) => ({ PutRequest: { Item } })) } }));
  return { poller, lines, write };
}

const pkOf = (record: DynamoDBRecord) => record.dynamodb!.Keys!.pk!.S!;
const nOf = (record: DynamoDBRecord) => Number(record.dynamodb!.NewImage!.n!.N);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the stream poller under parallel-shards', () => {
  it('takes the mapping from the template: batch size, retries, record age, bisect, filters', () => {
    expect(mapping).toMatchObject({ batchSize: STREAM_BATCH_SIZE, maximumRetryAttempts: 10, maximumRecordAgeSeconds: 3600, bisectBatchOnFunctionError: true });
    expect(pollerSettingsOf(mapping, { parallelShards: true })).toMatchObject({
      batchSize: STREAM_BATCH_SIZE,
      maxRetries: 10,
      maxRecordAgeMs: 3_600_000,
      bisectOnError: true,
    });
    expect(pollerSettingsOf(mapping, { parallelShards: false })).not.toHaveProperty('parallel');
    expect(mapping.filterPatterns.length).toBeGreaterThan(0);
  });

  it("runs several lanes at once and keeps each partition key's records in order", async () => {
    const seen = new Map<string, number[]>();
    let running = 0;
    let mostAtOnce = 0;
    const keysInFlight = new Set<string>();
    let keyOverlaps = 0;
    const { poller, write } = await setup(async (event: DynamoDBStreamEvent) => {
      running++;
      mostAtOnce = Math.max(mostAtOnce, running);
      const keys = new Set(event.Records.map(pkOf));
      for (const key of keys) if (keysInFlight.has(key)) keyOverlaps++;
      for (const key of keys) keysInFlight.add(key);
      await sleep(50);
      for (const record of event.Records) seen.set(pkOf(record), [...(seen.get(pkOf(record)) ?? []), nOf(record)]);
      for (const key of keys) keysInFlight.delete(key);
      running--;
    });
    await poller.start();
    const machines = Array.from({ length: 12 }, (_, i) => `m${i}`);
    for (let n = 1; n <= 4; n++) await write(machines.map((id) => machineItem(id, n)));
    await poller.whenIdle(20_000);

    expect(mostAtOnce).toBeGreaterThan(1);
    expect(keyOverlaps).toBe(0);
    expect(Object.fromEntries(seen)).toEqual(Object.fromEntries(machines.map((id) => [`MACHINE#${id}`, [1, 2, 3, 4]])));
  });

  it("applies the template's filters and retries as many times as it says, then sends the position to the failure destination", async () => {
    const attempts = new Map<string, number>();
    const { poller, write } = await setup(async (event): Promise<DynamoDBBatchResponse> => {
      for (const record of event.Records) attempts.set(pkOf(record), (attempts.get(pkOf(record)) ?? 0) + 1);
      const failing = event.Records.filter((record) => pkOf(record) === 'MACHINE#broken');
      return { batchItemFailures: failing.map((record) => ({ itemIdentifier: record.dynamodb!.SequenceNumber! })) };
    });
    await poller.start();
    await write([machineItem('broken', 1), machineItem('fine', 1), { pk: 'TENANT#acme', sk: '#TENANT', n: 1 }]);
    await poller.whenIdle(20_000);

    expect(attempts.get('MACHINE#broken')).toBe(mapping.maximumRetryAttempts + 1);
    expect(attempts.get('MACHINE#fine')).toBe(1);
    expect(attempts.has('TENANT#acme')).toBe(false);
    expect(poller.stats()).toMatchObject({ filteredOut: 1, setAside: 1, failureEntries: 1 });
    const [entry] = poller.failures();
    expect(entry).toMatchObject({ condition: 'RetryAttemptsExhausted', batchSize: 1 });
    expect(Object.keys(entry!).sort()).toEqual(
      [
        'approximateArrivalOfFirstRecord',
        'approximateArrivalOfLastRecord',
        'at',
        'batchSize',
        'condition',
        'endSequenceNumber',
        'shardId',
        'startSequenceNumber',
        'streamArn',
      ].sort(),
    );
    expect(entry!.startSequenceNumber).toBe(entry!.endSequenceNumber);
  });

  it('does not deliver records older than the maximum record age: the failure destination gets their positions', async () => {
    const delivered: DynamoDBRecord[] = [];
    // Two hours on: every record is older than the template's hour.
    const { poller, write } = await setup(async (event) => void delivered.push(...event.Records), { now: () => Date.now() + 2 * 3_600_000 });
    await poller.start();
    await write([machineItem('a', 1), machineItem('b', 1)]);
    await poller.whenIdle(20_000);

    expect(delivered).toEqual([]);
    expect(poller.stats()).toMatchObject({ expired: 2, delivered: 0 });
    expect(poller.failures().map((entry) => entry.condition)).toEqual(expect.arrayContaining(['RecordAgeExceeded']));
    expect(poller.failures().reduce((sum, entry) => sum + entry.batchSize, 0)).toBe(2);
  });

  it('under lambda-timeouts, a batch still running at the function timeout fails and is retried as the mapping says', async () => {
    let calls = 0;
    const delivered: string[] = [];
    const { poller, write } = await setup((event) =>
      invokeFunction({ functionName: 'StreamHandler', timeoutMs: 200, stopAtTimeout: true }, async () => {
        calls++;
        if (calls === 1) await sleep(1_000);
        else delivered.push(...event.Records.map(pkOf));
      }),
    );
    await poller.start();
    await write([machineItem('slow', 1)]);
    await poller.whenIdle(20_000);

    expect(calls).toBe(2);
    expect(delivered).toEqual(['MACHINE#slow']);
    expect(poller.stats().lastError).toMatch(/Task timed out after 0\.20 seconds/);
  });
});
