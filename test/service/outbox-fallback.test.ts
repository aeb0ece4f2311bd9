import { describe, expect, it } from 'vitest';
import { publishedEvent, repairEvent, type PublishedEvent } from '#domain/events/events.ts';
import { outboxWindow } from '#domain/events/outbox.ts';
import { iso, utcDay } from '#domain/core/time.ts';
import { sweep } from '#reconcilers/sweep.ts';
import { deliverOutboxEvent, type EventPublisher } from '#runtime/events.ts';
import { harness, siteWith, type Harness } from '#test/support/service-harness.ts';

// The sweep's fallback for the outbox: what the stream left undelivered (a record dropped at maxRecordAge) goes out
// once the grace has passed, once per id; what the stream delivered never goes out again.

const graceMs = (h: Harness) => h.ctx.config.sweep.outbox_grace_seconds * 1000;

/** Commits `count` RepairRequested events (outbox entries) as a change would, and nothing delivers them. */
async function strand(h: Harness, count: number): Promise<void> {
  const machine = (await h.store.getMachine('gb200-1'))!;
  const at = iso(h.clock.now());
  await h.store.commit({ history: Array.from({ length: count }, () => repairEvent('RepairRequested', machine, { actor: 'admin' }, at)) });
}

/** The outbox entries committed so far, as the stream would have carried them. */
async function outboxEntries(h: Harness) {
  const window = outboxWindow(undefined, h.clock.now(), -1)!;
  return (await h.store.outboxEntriesOfDay(utcDay(h.clock.now()), window, { limit: 100 })).items.map((entry) => entry.outbox);
}

function countsById(events: PublishedEvent[]): number[] {
  const counts = new Map<string, number>();
  for (const event of events) counts.set(event.detail.id, (counts.get(event.detail.id) ?? 0) + 1);
  return [...counts.values()];
}
// The site agent of the harness falls silent as time passes: the sweep then emits (and later delivers) its own events.
const repairIds = (events: PublishedEvent[]) =>
  events
    .filter((event) => event.type === 'RepairRequested')
    .map((event) => event.detail.id)
    .sort();

describe('the outbox fallback', () => {
  it('delivers what the stream left undelivered once the grace has passed, once per id, and never what it delivered', async () => {
    const h = harness();
    await siteWith(h, { gb200: 1 });
    await strand(h, 3);
    const entries = await outboxEntries(h);
    expect(entries).toHaveLength(3);
    // The stream delivered the first.
    await deliverOutboxEvent(h.ctx, entries[0]!);

    h.clock.advance(graceMs(h) - 1_000);
    await sweep(h.ctx);
    expect(h.events).toHaveLength(1);

    h.clock.advance(2_000);
    expect(await sweep(h.ctx)).toMatchObject({ failed: 0 });
    expect(repairIds(h.events)).toEqual(entries.map((entry) => publishedEvent(entry).detail.id).sort());
    expect(countsById(h.events).every((count) => count === 1)).toBe(true);

    h.clock.advance(graceMs(h));
    await sweep(h.ctx);
    expect(repairIds(h.events)).toHaveLength(3);
    expect(countsById(h.events).every((count) => count === 1)).toBe(true);
    const delivered = (await h.store.listHistory('gb200-1', { limit: 50 })).items.filter((entry) => entry.action === 'event-delivered');
    expect(delivered.map((entry) => entry.eventId).sort()).toEqual(repairIds(h.events));
  });

  it('overlapping runs deliver each stranded event once', async () => {
    const h = harness();
    await siteWith(h, { gb200: 1 });
    await strand(h, 4);
    h.clock.advance(graceMs(h) + 1_000);
    await Promise.all([sweep(h.ctx), sweep(h.ctx), sweep(h.ctx)]);
    await sweep(h.ctx);
    expect(repairIds(h.events)).toHaveLength(4);
    expect(countsById(h.events).every((count) => count === 1)).toBe(true);
  });

  it('a delivery that fails is tried again by the next run, and nothing delivered before goes out twice', async () => {
    const h = harness();
    await siteWith(h, { gb200: 1 });
    await strand(h, 3);
    const [, refused] = await outboxEntries(h);
    const refusedId = publishedEvent(refused!).detail.id;
    let refuse = true;
    const flaky: EventPublisher = {
      publish: async (event) => {
        if (refuse && event.detail.id === refusedId) throw new Error('EventBridge is unavailable');
        await h.ctx.events.publish(event);
      },
    };
    h.clock.advance(graceMs(h) + 1_000);
    expect((await sweep({ ...h.ctx, events: flaky })).failed).toBe(1);
    expect(repairIds(h.events)).toHaveLength(2);
    expect(repairIds(h.events)).not.toContain(refusedId);

    refuse = false;
    h.clock.advance(60_000);
    expect((await sweep({ ...h.ctx, events: flaky })).failed).toBe(0);
    expect(repairIds(h.events)).toHaveLength(3);
    expect(countsById(h.events).every((count) => count === 1)).toBe(true);
  });
});
