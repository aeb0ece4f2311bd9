import { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { createApiHandler, type ApiEvent } from '#http/api-handler.ts';
import { defineRoute } from '#http/route.ts';
import { registerMachine } from '#domain/machines/machines.ts';
import { aMachine, T0 } from '#test/support/fixtures.ts';
import { injectThrottles } from '#local/aws-semantics/throttle.ts';
import { seededRandom } from '#local/stream-chaos.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import { createDocumentClient } from '#store/client.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { ThrottledError } from '#store/port.ts';
import { freshTables } from '#test/support/tables.ts';

// DynamoDB throttles as AWS does (FLEETWARD_AWS_SEMANTICS=throttle), on DynamoDB Local: the store gets every write
// through within its retry budget, or fails it whole with a ThrottledError.

async function throttledStore(share: number, seed = 7) {
  const { endpoint, names } = await freshTables('throttle');
  const client = createDocumentClient(endpoint);
  const store = new DynamoFleetStore(client, names.table, dueTimes);
  // A store that has read the table's layout once, as every container soon has: until then its writes wait for that
  // read (test/unit/table-layout.test.ts), and under throttles on every call it would never come.
  await store.listMachines({ limit: 1 });
  const stats = injectThrottles(client, { share, random: seededRandom(seed) });
  return {
    store,
    observer: new DynamoFleetStore(createDocumentClient(endpoint), names.table, dueTimes),
    stats,
  };
}

describe('a store whose calls DynamoDB throttles', () => {
  it('gets every conditional write and batch through when a fifth of the calls are throttled', async () => {
    const { store, observer, stats } = await throttledStore(0.2);
    for (let i = 0; i < 20; i++) await store.commit(registerMachine(null, { id: `m-${i}`, machineType: 'gb200', rack: 'r1' }, 'ops', T0)!);
    await store.createMachines(Array.from({ length: 60 }, (_, i) => aMachine({ id: `b-${i}` })));
    const ids = [...Array.from({ length: 20 }, (_, i) => `m-${i}`), ...Array.from({ length: 60 }, (_, i) => `b-${i}`)];
    expect([...(await observer.getMachines(ids)).keys()].sort()).toEqual(ids.sort());
    expect(stats.throttled).toBeGreaterThan(0);
  });

  it('writes the rest of a batch DynamoDB processes only in part, round after round', async () => {
    const { store, observer, stats } = await throttledStore(1);
    await store.createMachines(Array.from({ length: 6 }, (_, i) => aMachine({ id: `p-${i}` })));
    expect((await observer.getMachines(Array.from({ length: 6 }, (_, i) => `p-${i}`))).size).toBe(6);
    expect(stats.partlyProcessed).toBeGreaterThan(1);
  });

  it('fails a write it cannot get through with a ThrottledError, and writes nothing of it', async () => {
    const { store, observer } = await throttledStore(1);
    const started = Date.now();
    const failed = await store.commit(registerMachine(null, { id: 'never', machineType: 'gb200', rack: 'r1' }, 'ops', T0)!).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(ThrottledError);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await observer.getMachine('never')).toBeNull();
  });
});

describe('an API whose Idempotency-Key records DynamoDB throttles', () => {
  it('answers 503 throttled with Retry-After, not 500, and runs nothing of the request', async () => {
    const { endpoint, names } = await freshTables('throttle-idem');
    const client = createDocumentClient(endpoint);
    const stats = injectThrottles(client, { share: 1, random: seededRandom(3) });
    let ran = 0;
    const handler = createApiHandler(
      [
        defineRoute({
          operationId: 'counts',
          method: 'POST',
          path: '/counts',
          roles: 'public',
          summary: 'counts its runs',
          responses: { 200: null },
          handle: async () => {
            ran++;
            return { status: 200 as const };
          },
        }),
      ],
      {} as never,
      { idempotency: { client, tableName: names.idempotencyTable }, logger: new Logger({ logLevel: 'SILENT' }) },
    );
    const event = {
      version: '2.0',
      routeKey: '$default',
      rawPath: '/counts',
      rawQueryString: '',
      headers: { 'idempotency-key': 'k-1' },
      isBase64Encoded: false,
      requestContext: {
        requestId: 'req-1',
        http: { method: 'POST', path: '/counts' },
        // A caller with a token: anonymous callers get no idempotency.
        authorizer: { jwt: { claims: { sub: 'carol', org: 'acme', roles: '[tenant]' }, scopes: null } },
      },
    } as unknown as ApiEvent;
    const result = await handler(event, { awsRequestId: 'req-1', getRemainingTimeInMillis: () => 10_000 } as Context);
    expect(result, JSON.stringify(result)).toMatchObject({ statusCode: 503 });
    expect(JSON.parse(result.body!)).toMatchObject({ status: 503, code: 'throttled' });
    expect(result.headers?.['retry-after']).toBe('1');
    expect(ran).toBe(0);
    expect(stats.throttled).toBeGreaterThan(0);
  });
});
