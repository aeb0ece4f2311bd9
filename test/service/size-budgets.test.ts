import { describe, expect, it } from 'vitest';
import { bucketOf } from '#domain/machines/heartbeat.ts';
import { Rejection } from '#domain/core/rejection.ts';
import { routes } from '#http/routes/index.ts';
import { DEFAULT_MAX_BODY_BYTES } from '#http/route.ts';
import { AWS_LIMITS } from '#lib/aws-limits.ts';
import { receiveHeartbeat } from '#services/heartbeats.ts';
import { HEARTBEAT_MAX_BODY_BYTES } from '#site/agent-contract.ts';
import { ITEM_LIMIT_BYTES, itemSizeBytes, TRANSACTION_LIMIT_BYTES } from '#store/item-size.ts';
import { harness } from '#test/support/service-harness.ts';

// Worst cases held to what AWS refuses: Lambda's 6 MB request, DynamoDB's 400 KB item and 4 MB transaction.

/** What API Gateway wraps around a body in the Lambda event (headers, request context), generously. */
const EVENT_ENVELOPE_BYTES = 64 * 1024;

describe('request bodies', () => {
  it.each(routes.filter((route) => route.body).map((route) => [`${route.method} ${route.path}`, route] as const))(
    '%s: the cap plus the event around it fits a Lambda request',
    (_name, route) => {
      expect((route.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES) + EVENT_ENVELOPE_BYTES).toBeLessThanOrEqual(AWS_LIMITS.lambdaRequestBytes);
    },
  );
});

describe('item sizes', () => {
  it('count as DynamoDB does: names and values, lists and maps with their overhead', () => {
    expect(itemSizeBytes({ pk: 'MACHINE#m1' })).toBe(2 + 10);
    expect(itemSizeBytes({ n: 123456 })).toBe(1 + 4);
    expect(itemSizeBytes({ ok: true, none: null })).toBe(2 + 1 + 4 + 1);
    expect(itemSizeBytes({ ids: ['ab', 'c'] })).toBe(3 + 3 + (1 + 2) + (1 + 1));
    expect(itemSizeBytes({ m: { k: 'v' } })).toBe(1 + 3 + 1 + 1 + 1);
    expect(itemSizeBytes({ s: 'é' })).toBe(1 + 2);
  });
});

/** A roster body of exactly `bytes` of JSON, of ids as long as the contract allows, as `receiveHeartbeat` gets it. */
function rosterOf(bytes: number, idLength: number, accept: (id: string) => boolean = () => true): string[] {
  const ids: string[] = [];
  let size = '{"machines":[]}'.length;
  for (let n = 0; ; n++) {
    const id = `m-${n}-`.padEnd(idLength, 'x');
    if (!accept(id)) continue;
    const entry = `{"id":"${id}"}`.length + 1;
    if (size + entry > bytes) return ids;
    size += entry;
    ids.push(id);
  }
}

describe('a heartbeat at its byte cap', () => {
  it("commits its roster in one transaction under DynamoDB's limits, with ids of the longest length", async () => {
    const h = harness();
    const ids = rosterOf(HEARTBEAT_MAX_BODY_BYTES, 128);
    expect(ids.length).toBeGreaterThan(25_000);
    const result = await receiveHeartbeat(h.ctx, ids);
    expect(result.stored).toBe(true);
    expect(result.changedBuckets.length).toBe(64);
    expect(HEARTBEAT_MAX_BODY_BYTES).toBeLessThan(TRANSACTION_LIMIT_BYTES);
  });

  it('holds 100,000 machines with ids of 25 characters', () => {
    expect(rosterOf(HEARTBEAT_MAX_BODY_BYTES, 25).length).toBeGreaterThanOrEqual(100_000);
  });

  it('is refused with a 413 naming the limit, not a store error, when its ids crowd one roster bucket past an item', async () => {
    const h = harness();
    const crowded = rosterOf(600_000, 128, (id) => bucketOf(id) === '00');
    const refused = await receiveHeartbeat(h.ctx, crowded).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Rejection);
    expect(refused).toMatchObject({ status: 413, code: 'payload-too-large', limit: ITEM_LIMIT_BYTES });
    expect(await h.store.getRosterDigests()).toBeNull();
  });
});
