import { QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { dueTimes } from '#reconcilers/due-times.ts';
import { beforeAll, describe, expect, it } from 'vitest';
import { defaultSiteConfig } from '#config/site-config.ts';
import { eventCatalog, type EventType } from '#domain/events/event-schemas.ts';
import { publishedEvent, repairEvent } from '#domain/events/events.ts';
import { addOverride } from '#domain/repair/machine-edits.ts';
import { systemClock } from '#domain/core/model.ts';
import { createStreamHandler, STREAM_RESERVE_MS } from '#handlers/stream.ts';
import { lambdaContext } from '#local/lambda-invocation.ts';
import type { AppContext } from '#runtime/context.ts';
import { inProcessBus, type EventPublisher } from '#runtime/events.ts';
import { randomIds } from '#handlers/lambda-context.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { keys } from '#store/keys.ts';
import { outboxEntryOf } from '#store/aggregates/event-items.ts';
import { aMachine, AT } from '#test/support/fixtures.ts';
import { streamRecords } from '#test/support/stream-records.ts';
import { freshTables } from '#test/support/tables.ts';
import { prometheusMetrics } from '#runtime/prometheus-metrics.ts';

// Delivery of the outbox on a real DynamoDB Local table: the stream handler gets every record of the table's stream
// twice, shuffled across machines, in concurrent batches. Each event goes out with the id of its stored entry every
// time, and its delivery (marker and `event-delivered` history entry) is recorded exactly once.

const silent = { info: () => {}, warn: () => {}, error: () => {} };
type Tables = Awaited<ReturnType<typeof freshTables>>;

function contextOn(tables: Tables, events: EventPublisher): AppContext {
  return {
    store: new DynamoFleetStore(tables.client, tables.names.table, dueTimes),
    config: defaultSiteConfig(),
    clock: systemClock,
    ids: randomIds,
    agent: {
      create: () => Promise.reject(new Error('no site agent call is expected here')),
      delete: () => Promise.reject(new Error('no site agent call is expected here')),
      status: () => Promise.reject(new Error('no site agent call is expected here')),
      startMaintenance: () => Promise.reject(new Error('no site agent call is expected here')),
      validate: () => Promise.reject(new Error('no site agent call is expected here')),
      power: () => Promise.reject(new Error('no site agent call is expected here')),
    },
    events,
    metrics: prometheusMetrics(),
    log: silent,
  };
}

/** A reproducible shuffle (mulberry32), so a failure can be replayed. */
function shuffled<T>(items: T[], seed: number): T[] {
  let state = seed;
  const random = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** The ids of the events stored in machines' histories, derived from their keys. */
async function storedEventIds(tables: Tables, machineIds: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const machineId of machineIds) {
    const { Items } = await tables.client.send(
      new QueryCommand({
        TableName: tables.names.table,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': keys.machine(machineId).pk, ':prefix': keys.historyPrefix },
      }),
    );
    for (const item of Items ?? []) {
      const outbox = outboxEntryOf(item);
      if (outbox) ids.push(publishedEvent(outbox).detail.id);
    }
  }
  return ids;
}

/** Delivery markers and `event-delivered` history entries, by event id (a Scan: fine in a test). */
async function deliveriesRecorded(tables: Tables) {
  const { Items = [] } = await tables.client.send(new ScanCommand({ TableName: tables.names.table, ConsistentRead: true }));
  return {
    markers: Items.filter((item) => item.entity === 'event-delivery').map((item) => item.eventId as string),
    deliveredEntries: Items.filter((item) => item.action === 'event-delivered').map((item) => item.eventId as string),
  };
}

const sorted = (values: string[]) => [...values].sort();

describe('delivering the outbox', () => {
  let tables: Tables;
  beforeAll(async () => {
    tables = await freshTables('events');
  });

  it('publishes each event with one stable id and records its delivery once, with every record delivered twice, shuffled', async () => {
    const bus = inProcessBus(silent);
    const ctx = contextOn(tables, bus);
    const machineIds = ['m-1', 'm-2', 'm-3', 'm-4'];
    for (const id of machineIds) await ctx.store.commit({ machines: [{ before: null, after: aMachine({ id, rack: `r${id.at(-1)}` }) }], history: [] });
    // Three repair requests (each changes its machine and adds history with one event)...
    for (const id of machineIds.slice(0, 3)) {
      const machine = (await ctx.store.getMachine(id))!;
      await ctx.store.commit(addOverride(machine, { template: 'request-repair', message: 'flaky NVLink' }, 'admin', new Date()).change);
    }
    // ...and two occurrences of the same type, machine and time, in one change: two events, two ids.
    const m4 = (await ctx.store.getMachine('m-4'))!;
    await ctx.store.commit({
      history: [repairEvent('RepairRequested', m4, { actor: 'admin' }, AT), repairEvent('RepairRequested', m4, { actor: 'admin' }, AT)],
    });
    const expectedIds = await storedEventIds(tables, machineIds);
    expect(expectedIds).toHaveLength(5);
    expect(new Set(expectedIds).size).toBe(5);

    const records = await streamRecords(tables.endpoint, tables.names.table);
    const deliveries = shuffled([...records, ...records.map((r) => structuredClone(r))], 20261123);
    expect(new Set(deliveries.slice(0, 8).map((r) => r.dynamodb!.Keys!.pk!.S)).size, 'shuffled across machines').toBeGreaterThan(1);
    const handler = createStreamHandler(ctx);
    const batches: DynamoDBRecord[][] = [];
    for (let i = 0; i < deliveries.length; i += 5) batches.push(deliveries.slice(i, i + 5));
    // Two batches at a time, as two shards' invocations would run.
    for (let i = 0; i < batches.length; i += 2) {
      const results = await Promise.all(batches.slice(i, i + 2).map((batch) => handler({ Records: batch })));
      for (const result of results) expect(result.batchItemFailures).toEqual([]);
    }

    // Published twice each (at least once), always with the same id and detail, each detail satisfying its schema.
    const byId = new Map<string, typeof bus.delivered>();
    for (const event of bus.delivered) byId.set(event.detail.id, [...(byId.get(event.detail.id) ?? []), event]);
    expect(sorted([...byId.keys()])).toEqual(sorted(expectedIds));
    for (const [id, publications] of byId) {
      expect(publications, id).toHaveLength(2);
      expect(publications[1]).toEqual(publications[0]);
      const parsed = eventCatalog[publications[0]!.type as EventType].detail.safeParse(publications[0]!.detail);
      expect(parsed.error?.issues).toBeUndefined();
    }
    // Recorded once: one marker and one `event-delivered` history entry per event id.
    const recorded = await deliveriesRecorded(tables);
    expect(sorted(recorded.markers)).toEqual(sorted(expectedIds));
    expect(sorted(recorded.deliveredEntries)).toEqual(sorted(expectedIds));
  });

  it('records nothing when publishing fails, and the retried record publishes the same id and records it once', async () => {
    const bus = inProcessBus(silent);
    let refuse = true;
    const flaky: EventPublisher = {
      publish: async (event) => {
        if (refuse) throw new Error('EventBridge is unavailable');
        await bus.publish(event);
      },
    };
    const ctx = contextOn(tables, flaky);
    await ctx.store.commit({ machines: [{ before: null, after: aMachine({ id: 'm-9' }) }], history: [] });
    const before = await streamRecords(tables.endpoint, tables.names.table);
    await ctx.store.commit(addOverride((await ctx.store.getMachine('m-9'))!, { template: 'request-repair' }, 'admin', new Date()).change);
    // The change's records: the machine's, the override's history entry and the event's (the outbox).
    const changeRecords = (await streamRecords(tables.endpoint, tables.names.table)).slice(before.length);
    const outboxRecords = changeRecords.filter((record) => record.dynamodb?.NewImage?.event);
    expect(outboxRecords).toHaveLength(1);
    expect(changeRecords.length).toBeGreaterThan(1);
    const handler = createStreamHandler(ctx);
    const [id] = await storedEventIds(tables, ['m-9']);

    const failed = await handler({ Records: changeRecords });
    expect(failed.batchItemFailures).toEqual([{ itemIdentifier: outboxRecords[0]!.dynamodb!.SequenceNumber }]);
    expect((await deliveriesRecorded(tables)).markers).not.toContain(id);

    refuse = false;
    for (const attempt of [1, 2]) expect((await handler({ Records: structuredClone(changeRecords) })).batchItemFailures, `attempt ${attempt}`).toEqual([]);
    expect(bus.delivered.map((event) => event.detail.id)).toEqual([id, id]);
    const recorded = await deliveriesRecorded(tables);
    expect(recorded.markers.filter((marker) => marker === id)).toHaveLength(1);
    expect(recorded.deliveredEntries.filter((entry) => entry === id)).toHaveLength(1);
  });

  it("answers before its function's timeout when a reaction hangs: the record is reported and comes back, the others are done", async () => {
    const bus = inProcessBus(silent);
    let hang = true;
    const hanging: EventPublisher = { publish: (event) => (hang ? new Promise(() => {}) : bus.publish(event)) };
    const ctx = contextOn(tables, hanging);
    await ctx.store.commit({ machines: [{ before: null, after: aMachine({ id: 'm-10' }) }], history: [] });
    const before = await streamRecords(tables.endpoint, tables.names.table);
    await ctx.store.commit(addOverride((await ctx.store.getMachine('m-10'))!, { template: 'request-repair' }, 'admin', new Date()).change);
    const changeRecords = (await streamRecords(tables.endpoint, tables.names.table)).slice(before.length);
    const outbox = changeRecords.find((record) => record.dynamodb?.NewImage?.event)!;
    const handler = createStreamHandler(ctx);

    const timeoutMs = STREAM_RESERVE_MS + 300;
    const started = Date.now();
    const answered = await handler({ Records: changeRecords }, lambdaContext('StreamHandler', 'deadline-test', timeoutMs));
    expect(answered.batchItemFailures).toEqual([{ itemIdentifier: outbox.dynamodb!.SequenceNumber }]);
    expect(Date.now() - started).toBeLessThan(timeoutMs);

    hang = false;
    expect((await handler({ Records: structuredClone([outbox]) }, lambdaContext('StreamHandler', 'deadline-test-2', timeoutMs))).batchItemFailures).toEqual([]);
    const [id] = await storedEventIds(tables, ['m-10']);
    expect(bus.delivered.map((event) => event.detail.id)).toEqual([id]);
  });
});
