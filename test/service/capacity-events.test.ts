import { describe, expect, it, vi } from 'vitest';
import type { Machine } from '#domain/core/model.ts';
import { finishCleanup } from '#domain/instances/cleanup.ts';
import { readCapacityEvents } from '#services/capacity-events.ts';
import { createInstance, releaseInstance } from '#services/instances.ts';
import { addHealthOverride, removeHealthOverride } from '#services/machine-actions.ts';
import { readOrgCapacity } from '#services/org-capacity.ts';
import { retireMachine } from '#services/retirement.ts';
import { ops } from '#test/support/fixtures.ts';
import { deliver, recordStream, type StreamRecord } from '#test/support/recorded-stream.ts';
import { harness, rejection, siteWith, tenant, type Harness } from '#test/support/service-harness.ts';

const alice = tenant('acme', 'alice');
const issue = { category: 'HARDWARE' as const, summary: 'ECC errors' };

/** What the reservations feature does to a machine: sets or clears `reservation`, in one guarded commit. */
async function reserve(h: Harness, machineId: string, reservation: Machine['reservation'] | null) {
  const before = (await h.store.getMachine(machineId))!;
  const { reservation: _previous, ...rest } = before;
  await h.store.commit({ machines: [{ before, after: reservation ? { ...rest, reservation } : rest }], history: [] });
}

/** The whole feed of an org, followed from the start a page of `limit` at a time. */
async function follow(h: Harness, org: string, limit = 2) {
  const items = [];
  let cursor = '0';
  for (;;) {
    const page = await readCapacityEvents(h.ctx, org, { since: cursor, limit });
    items.push(...page.items);
    if (page.items.length === 0) return { items, cursor };
    cursor = page.cursor;
  }
}

const changes = (items: Array<{ machineId: string; change: string; reason: string }>) => items.map((e) => [e.machineId, e.change, e.reason]);

describe('capacity events', () => {
  it('tell a reserved machine delivered, out for repair and back, retired, released; an on-demand machine taken for repair', async () => {
    const h = harness();
    const records = recordStream(h);
    await siteWith(h, { gb200: 2, h100: 1 });
    await reserve(h, 'gb200-1', { id: 'rsv-1', org: 'acme' });
    await reserve(h, 'gb200-2', { id: 'rsv-1', org: 'acme' });
    await deliver(h, records.splice(0), 1);
    await addHealthOverride(h.ctx, 'gb200-1', { template: 'request-repair' }, ops);
    await deliver(h, records.splice(0), 2);
    await removeHealthOverride(h.ctx, 'gb200-1', 'repair-request', ops);
    await retireMachine(h.ctx, 'gb200-2', 'end of life', ops);
    await deliver(h, records.splice(0), 3);
    await reserve(h, 'gb200-1', null);
    const onDemand = await createInstance(h.ctx, alice, { machineType: 'h100' });
    await deliver(h, records.splice(0), 4);
    await releaseInstance(h.ctx, alice, onDemand.id, { issue });
    await deliver(h, records.splice(0), 5);

    const feed = await follow(h, 'acme');
    expect(changes(feed.items.filter((e) => e.machineId !== onDemand.machineId))).toEqual([
      ['gb200-1', 'delivered', 'reservation'],
      ['gb200-2', 'delivered', 'reservation'],
      ['gb200-1', 'withdrawn', 'repair'],
      ...[
        ['gb200-1', 'delivered', 'repair-return'],
        ['gb200-2', 'withdrawn', 'retired'],
      ].sort(),
      ['gb200-1', 'withdrawn', 'reservation-released'],
    ]);
    // The org's own create is no entry; its machine leaving for repair is.
    expect(changes(feed.items.filter((e) => e.machineId === onDemand.machineId))).toEqual([[onDemand.machineId, 'withdrawn', 'repair']]);
    expect(feed.cursor).toBe(String(feed.items.length));
    expect(new Set(feed.items.map((e) => e.id)).size).toBe(feed.items.length);

    // Each entry is in the outbox once, as its event, naming the entry.
    const machineIds = [...new Set(feed.items.map((e) => e.machineId))];
    const history = (await Promise.all(machineIds.map(async (id) => (await h.store.listHistory(id, { limit: 100 })).items))).flat();
    const outbox = history.flatMap((entry) => (entry.event?.type.startsWith('Capacity') ? [entry.event] : []));
    expect(outbox.map((event) => event.detail.entryId).sort()).toEqual(feed.items.map((e) => e.id).sort());
    expect(outbox.find((event) => event.detail.entryId === feed.items[0]!.id)).toMatchObject({
      type: 'CapacityDelivered',
      detail: { org: 'acme', machineId: 'gb200-1', machineType: 'gb200', reason: 'reservation' },
    });

    // Nothing of it is another org's.
    expect((await readCapacityEvents(h.ctx, 'globex', { limit: 50 })).items).toEqual([]);
  });

  it('numbers every entry once, without gaps, whatever order and however often the stream delivers, and keeps the ids', async () => {
    const h = harness();
    const records = recordStream(h);
    await siteWith(h, { gb200: 30 });
    const orgs = ['acme', 'globex'];
    const all: StreamRecord[] = [];
    const phase = async (seed: number) => {
      const fresh = records.splice(0);
      all.push(...fresh);
      await deliver(h, fresh, seed);
    };
    for (let i = 1; i <= 30; i++) await reserve(h, `gb200-${i}`, { id: `rsv-${i % 2}`, org: orgs[i % 2]! });
    await phase(17);
    for (let i = 1; i <= 30; i += 3) await addHealthOverride(h.ctx, `gb200-${i}`, { template: 'request-repair' }, ops);
    await phase(19);
    for (let i = 1; i <= 30; i += 6) await removeHealthOverride(h.ctx, `gb200-${i}`, 'repair-request', ops);
    await phase(23);
    const first = await Promise.all(orgs.map((org) => follow(h, org, 7)));
    // Every record again, late and shuffled: nothing new.
    await deliver(h, all, 29);
    const again = await Promise.all(orgs.map((org) => follow(h, org, 500)));
    expect(again).toEqual(first);
    for (const feed of first) {
      expect(new Set(feed.items.map((e) => e.id)).size).toBe(feed.items.length);
      expect(feed.cursor).toBe(String(feed.items.length));
    }
    const entries = first.flatMap((feed) => feed.items);
    const reasons = (reason: string) =>
      entries
        .filter((e) => e.reason === reason)
        .map((e) => e.machineId)
        .sort();
    const machines = (step: number, from = 1) => Array.from({ length: 30 }, (_, i) => i + 1).filter((n) => (n - from) % step === 0 && n >= from);
    expect(reasons('reservation')).toEqual(
      machines(1)
        .map((n) => `gb200-${n}`)
        .sort(),
    );
    // Machines 1, 4, 7 ... went out for repair; 1, 7, 13 ... came back.
    expect(reasons('repair')).toEqual(
      machines(3)
        .map((n) => `gb200-${n}`)
        .sort(),
    );
    expect(reasons('repair-return')).toEqual(
      machines(6)
        .map((n) => `gb200-${n}`)
        .sort(),
    );
  });

  it('tells the org its machine went to repair on its own report, when the stream delivers nothing before the release', async () => {
    const h = harness();
    const records = recordStream(h);
    await siteWith(h, { h100: 1 });
    const held = await createInstance(h.ctx, alice, { machineType: 'h100' });
    await releaseInstance(h.ctx, alice, held.id, { issue });
    await deliver(h, records.splice(0), 7);
    const feed = await follow(h, 'acme');
    expect(changes(feed.items)).toEqual([[held.machineId, 'withdrawn', 'repair']]);
  });

  it("tells the org its machine went to repair on its own report, when the stream delivers nothing before the machine's cleanup ended", async () => {
    const h = harness();
    const records = recordStream(h);
    await siteWith(h, { h100: 1 });
    const held = await createInstance(h.ctx, alice, { machineType: 'h100' });
    await deliver(h, records.splice(0), 5);
    await releaseInstance(h.ctx, alice, held.id, { issue });
    const machine = (await h.store.getMachine(held.machineId))!;
    await h.store.commit(finishCleanup(machine, await h.store.getInstance(held.id), { ok: true }, 'site-agent', h.clock.now()));
    await deliver(h, records.splice(0), 7);
    const feed = await follow(h, 'acme');
    expect(changes(feed.items)).toEqual([[held.machineId, 'withdrawn', 'repair']]);
  });

  it('refuses a cursor past the last entry, and answers an up-to-date cursor with no entries and the same cursor', async () => {
    const h = harness();
    const records = recordStream(h);
    await siteWith(h, { gb200: 1 });
    await reserve(h, 'gb200-1', { id: 'rsv-1', org: 'acme' });
    await deliver(h, records.splice(0), 1);
    expect(await readCapacityEvents(h.ctx, 'acme', { since: '1', limit: 50 })).toEqual({ items: [], cursor: '1' });
    expect(await rejection(readCapacityEvents(h.ctx, 'acme', { since: '2', limit: 50 }))).toMatchObject({ status: 422, code: 'invalid-cursor' });
  });
});

describe('capacity events cost', () => {
  it('a page is one Query of the org feed whatever its length, and changes that move no capacity read no feed', async () => {
    const readsFor = async (reserved: number) => {
      const h = harness();
      const records = recordStream(h);
      await siteWith(h, { gb200: reserved });
      for (let i = 1; i <= reserved; i++) await reserve(h, `gb200-${i}`, { id: 'rsv-1', org: 'acme' });
      await deliver(h, records.splice(0), 3);
      const heads = vi.spyOn(h.store, 'capacityFeedHeads');
      // A degraded machine is unhealthy in the org's counts and nodes, and still delivered: the feed is not read.
      for (let i = 1; i <= reserved; i++) await addHealthOverride(h.ctx, `gb200-${i}`, { template: 'degraded' }, ops);
      await deliver(h, records.splice(0), 5);
      expect((await readOrgCapacity(h.ctx, 'acme')).byType.gb200?.healthy.machines).toBe(0);
      expect(heads).not.toHaveBeenCalled();
      const primitives = (h.store as unknown as { items: Record<'getItem' | 'getItems' | 'queryItems', () => Promise<unknown>> }).items;
      const spies = (['getItem', 'getItems', 'queryItems'] as const).map((name) => [name, vi.spyOn(primitives, name)] as const);
      const page = await readCapacityEvents(h.ctx, 'acme', { since: '1', limit: 50 });
      expect(page.items).toHaveLength(Math.min(50, reserved - 1));
      return Object.fromEntries(spies.map(([name, spy]) => [name, spy.mock.calls.length]));
    };
    const small = await readsFor(4);
    expect(small).toEqual({ getItem: 0, getItems: 0, queryItems: 1 });
    expect(await readsFor(120)).toEqual(small);
  });
});
