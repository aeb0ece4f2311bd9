import { beforeAll, describe, expect, it } from 'vitest';
import type { HistoryEntry, InstanceStatus, Machine } from '#domain/core/model.ts';
import { Rejection } from '#domain/core/rejection.ts';
import { iso } from '#domain/core/time.ts';
import type { FleetStore } from '#store/port.ts';
import { instanceListing } from '#store/aggregates/instance-items.ts';
import { LISTING_SHARDS, listingPartitionOf } from '#store/item-codec.ts';
import { aRepairRequest, T0 } from '../fixtures.ts';
import type { ContractKit } from './kit.ts';

export function listingsContract(kit: ContractKit): void {
  const { at, machine, instance, create, register, catalogue, allHistory, rejectionOf, newStore } = kit;

  describe('listInstances', () => {
    const org = 'list-org';
    const statuses: InstanceStatus[] = ['Ready', 'Provisioning', 'Ready', 'Terminated', 'Ready'];
    // Created a minute apart; li-4 is the newest.
    const ids = statuses.map((_, i) => `li-${i}`);
    const newestFirst = [...ids].reverse();

    beforeAll(async () => {
      await kit.store.commit({
        instances: [
          ...statuses.map((status, i) => create(instance(`li-${i}`, { org, status, createdAt: iso(at(i * 60_000)), updatedAt: iso(at(i * 60_000)) }))),
          create(instance('li-other-org', { org: 'someone-else', status: 'Ready', createdAt: iso(at(10 * 60_000)) })),
        ],
        history: [],
      });
    });

    async function allPages(page: { limit: number; status?: string }) {
      const pages: string[][] = [];
      let nextToken: string | undefined;
      do {
        const result = await kit.store.listInstances(org, { ...page, nextToken });
        expect(result.items.length).toBeLessThanOrEqual(page.limit);
        pages.push(result.items.map((i) => i.id));
        nextToken = result.nextToken;
      } while (nextToken && pages.length < 20);
      return pages;
    }

    it('lists one org, newest first, in one page when it fits', async () => {
      const result = await kit.store.listInstances(org, { limit: 50 });
      expect(result.items.map((i) => i.id)).toEqual(newestFirst);
      expect(result.nextToken).toBeUndefined();
      expect(result.items[0]).toEqual(instance('li-4', { org, status: 'Ready', createdAt: iso(at(4 * 60_000)), updatedAt: iso(at(4 * 60_000)) }));
    });

    it('pages by limit; nextToken continues where the page ended', async () => {
      const pages = await allPages({ limit: 2 });
      expect(pages.flat()).toEqual(newestFirst);
      expect(pages.slice(0, 3)).toEqual([newestFirst.slice(0, 2), newestFirst.slice(2, 4), newestFirst.slice(4)]);

      const first = await kit.store.listInstances(org, { limit: 2 });
      expect(first.nextToken).toEqual(expect.any(String));
      const second = await kit.store.listInstances(org, { limit: 2, nextToken: first.nextToken });
      expect(second.items.map((i) => i.id)).toEqual(newestFirst.slice(2, 4));
    });

    it('filters by status, across pages too', async () => {
      const readyNewestFirst = newestFirst.filter((id) => statuses[Number(id.slice(3))] === 'Ready');
      expect(readyNewestFirst).toEqual(['li-4', 'li-2', 'li-0']);
      expect((await kit.store.listInstances(org, { limit: 50, status: 'Ready' })).items.map((i) => i.id)).toEqual(readyNewestFirst);
      expect((await allPages({ limit: 2, status: 'Ready' })).flat()).toEqual(readyNewestFirst);
      expect((await kit.store.listInstances(org, { limit: 50, status: 'Failed' })).items).toEqual([]);
      expect((await kit.store.listInstances(org, { limit: 50, status: 'Terminated' })).items.map((i) => i.id)).toEqual(['li-3']);
    });

    it('an unknown org has nothing', async () => {
      expect(await kit.store.listInstances('nobody', { limit: 50 })).toEqual({ items: [], nextToken: undefined });
    });

    describe("over the org's listing shards", () => {
      const spread = 'shard-org';
      // Two by two at the same instant: the id orders those. Every third one Terminated, to filter on.
      const created = Array.from({ length: 40 }, (_, n) => ({ id: `ls-${String(n).padStart(2, '0')}`, ms: Math.floor(n / 2) * 1_000, n }));
      const status = (n: number): InstanceStatus => (n % 3 === 0 ? 'Terminated' : 'Ready');
      const newest = [...created].reverse().map((c) => c.id);

      beforeAll(async () => {
        for (const chunk of [created.slice(0, 20), created.slice(20)]) {
          const instances = chunk.map(({ id, ms, n }) => create(instance(id, { org: spread, status: status(n), createdAt: iso(at(ms)) })));
          await kit.store.commit({ instances, history: [] });
        }
      });

      async function pagesOf(page: { limit: number; status?: string }) {
        const pages: string[][] = [];
        let nextToken: string | undefined;
        do {
          const result = await kit.store.listInstances(spread, { ...page, nextToken });
          expect(result.items.length).toBeLessThanOrEqual(page.limit);
          pages.push(result.items.map((i) => i.id));
          nextToken = result.nextToken;
        } while (nextToken && pages.length < 100);
        return { pages, nextToken };
      }

      it('are many partitions, one per hash of the id', () => {
        const partitions = new Set(created.map((c) => listingPartitionOf(instanceListing(spread), c.id)));
        expect(partitions.size).toBeGreaterThan(LISTING_SHARDS / 2);
        expect(listingPartitionOf(instanceListing(spread), 'ls-07')).toBe(listingPartitionOf(instanceListing(spread), 'ls-07'));
      });

      it('merged newest first (ties by id), in full pages, the last without a token', async () => {
        expect((await kit.store.listInstances(spread, { limit: 500 })).items.map((i) => i.id)).toEqual(newest);
        const { pages, nextToken } = await pagesOf({ limit: 7 });
        expect(nextToken).toBeUndefined();
        expect(pages.flat()).toEqual(newest);
        expect(pages.slice(0, -1).every((ids) => ids.length === 7)).toBe(true);
      });

      it('filtered, every match once and in order, in a bounded number of pages', async () => {
        const terminated = newest.filter((id) => status(Number(id.slice(3))) === 'Terminated');
        for (const limit of [1, 2, 3]) {
          const { pages, nextToken } = await pagesOf({ limit, status: 'Terminated' });
          expect(nextToken).toBeUndefined();
          expect(pages.flat()).toEqual(terminated);
          expect(pages.length).toBeLessThanOrEqual(created.length);
        }
      });

      it("a shard whose page the filter emptied holds back other shards' older matches: it has read only so far", async () => {
        const org = 'held-back-org';
        const ids = Array.from({ length: 200 }, (_, n) => `hb-${n}`);
        const [first, second] = ids.filter((id) => listingPartitionOf(instanceListing(org), id) === listingPartitionOf(instanceListing(org), ids[0]!));
        const other = ids.find((id) => listingPartitionOf(instanceListing(org), id) !== listingPartitionOf(instanceListing(org), ids[0]!))!;
        // One shard: a newest Ready, then a Terminated; another shard: an older Terminated.
        const placed = [
          { id: first!, status: 'Ready' as const, ms: 3_000 },
          { id: second!, status: 'Terminated' as const, ms: 2_000 },
          { id: other, status: 'Terminated' as const, ms: 1_000 },
        ];
        await kit.store.commit({ instances: placed.map((p) => create(instance(p.id, { org, status: p.status, createdAt: iso(at(p.ms)) }))), history: [] });
        const listed: string[] = [];
        let nextToken: string | undefined;
        do {
          const page = await kit.store.listInstances(org, { limit: 1, status: 'Terminated', nextToken });
          listed.push(...page.items.map((i) => i.id));
          nextToken = page.nextToken;
        } while (nextToken && listed.length < 10);
        expect(listed).toEqual([second, other]);
      });
    });
  });

  describe('listHistory', () => {
    it('newest first, paged', async () => {
      const entry = (ms: number, action: string): HistoryEntry => ({ machineId: 'hist-m', at: iso(at(ms)), actor: 'ops', action });
      await kit.store.commit({ history: [entry(3_000, 'third'), entry(1_000, 'first')] });
      await kit.store.commit({ history: [entry(2_000, 'second'), entry(4_000, 'fourth')] });
      await kit.store.commit({ history: [{ machineId: 'hist-other', at: iso(at(9_000)), actor: 'ops', action: 'elsewhere' }] });

      const all = await kit.store.listHistory('hist-m', { limit: 50 });
      expect(all.items.map((h) => h.action)).toEqual(['fourth', 'third', 'second', 'first']);
      expect(all.items[0]).toEqual(entry(4_000, 'fourth'));

      const first = await kit.store.listHistory('hist-m', { limit: 3 });
      expect(first.items.map((h) => h.action)).toEqual(['fourth', 'third', 'second']);
      const rest = await kit.store.listHistory('hist-m', { limit: 3, nextToken: first.nextToken });
      expect(rest.items.map((h) => h.action)).toEqual(['first']);
      expect(rest.nextToken).toBeUndefined();

      // As DynamoDB: a page that stops at its limit has a next token even when nothing follows (the machine
      // history route relies on it to add the registration entry on a page with room).
      const whole = await kit.store.listHistory('hist-m', { limit: 4 });
      expect(whole.nextToken).toBeDefined();
      expect(await kit.store.listHistory('hist-m', { limit: 4, nextToken: whole.nextToken })).toEqual({ items: [], nextToken: undefined });
    });

    it('does not mix in the machine record itself, nor store its registration', async () => {
      await register('hist-reg');
      expect(await allHistory('hist-reg')).toEqual([]);
    });
  });

  describe('listReports and historySince (repair tickets)', () => {
    it("lists an org's reports newest first, paged, and a machine's history from an instant on, oldest first", async () => {
      const entry = (machineId: string, ms: number, action: string, reportingOrg?: string): HistoryEntry => ({
        machineId,
        at: iso(at(ms)),
        actor: 'acme-user',
        action,
        ...(reportingOrg ? { reportingOrg, issue: { category: 'HARDWARE', summary: `${action} on ${machineId}` } } : {}),
      });
      await kit.store.commit({
        history: [entry('rep-a', 1_000, 'released', 'rep-acme'), entry('rep-a', 1_000, 'quarantined'), entry('rep-a', 500, 'created')],
      });
      await kit.store.commit({ history: [entry('rep-b', 2_000, 'released', 'rep-acme'), entry('rep-c', 3_000, 'released', 'rep-globex')] });
      await kit.store.commit({ history: [entry('rep-a', 5_000, 'repaired'), entry('rep-a', 4_000, 'claimed')] });

      const first = await kit.store.listReports('rep-acme', { limit: 1 });
      expect(first.items).toEqual([entry('rep-b', 2_000, 'released', 'rep-acme')]);
      const rest = await kit.store.listReports('rep-acme', { limit: 1, nextToken: first.nextToken });
      expect(rest.items).toEqual([entry('rep-a', 1_000, 'released', 'rep-acme')]);
      expect((await kit.store.listReports('rep-globex', { limit: 10 })).items.map((h) => h.machineId)).toEqual(['rep-c']);

      const since = await kit.store.historySince('rep-a', iso(at(1_000)), 10);
      expect(
        since
          .map((h) => h.action)
          .slice(0, 2)
          .sort(),
      ).toEqual(['quarantined', 'released']);
      expect(since.map((h) => h.action).slice(2)).toEqual(['claimed', 'repaired']);
      expect((await kit.store.historySince('rep-a', iso(at(1_000)), 3)).map((h) => h.action)).toHaveLength(3);
    });
  });

  describe('eventsOnDay', () => {
    it('holds the history entries carrying an event, under their UTC day, oldest first', async () => {
      const entry = (machineId: string, at: string, type?: string): HistoryEntry => ({
        machineId,
        at,
        actor: 'ops',
        action: type ? 'event-emitted' : 'note',
        ...(type ? { message: type, event: { type, detail: { machineId } } } : {}),
      });
      const late = entry('ev-b', '2031-05-06T23:59:59.999Z', 'RepairCompleted');
      const early = entry('ev-a', '2031-05-06T00:00:00.000Z', 'MachineQuarantined');
      await kit.store.commit({
        history: [
          late,
          early,
          entry('ev-a', '2031-05-06T12:00:00.000Z'),
          entry('ev-a', '2031-05-05T23:59:59.999Z', 'RepairFailed'),
          entry('ev-c', '2031-05-07T00:00:00.000Z', 'RepairFailed'),
        ],
      });
      expect(await kit.store.eventsOnDay('2031-05-06')).toEqual([early, late]);
      expect((await kit.store.eventsOnDay('2031-05-05')).map((e) => e.event?.type)).toEqual(['RepairFailed']);
      expect(await kit.store.eventsOnDay('2031-05-08')).toEqual([]);
    });
  });

  describe('machine listings', () => {
    let fresh: FleetStore;
    const requested = (id: string, createdAt: string, over: Partial<Machine> = {}) =>
      machine(id, { healthOverrides: [{ ...aRepairRequest(id), createdAt }], ...over });
    beforeAll(async () => {
      fresh = await newStore();
      const machines = [
        machine('lm-a'),
        requested('lm-late', iso(at(50 * 60_000))),
        requested('lm-early', iso(at(10 * 60_000))),
        requested('lm-claimed', iso(at(0)), { state: 'Assigned', instanceId: 'repair-i', assignedAt: iso(at(20 * 60_000)) }),
      ];
      await fresh.commit({
        machines: machines.map(create),
        tenants: [create({ org: 'acme', capabilities: { targetedInstanceCreation: true }, updatedAt: iso(T0), version: 0 })],
        history: [],
      });
      await catalogue(machines, fresh);
    });

    it('listMachines holds every machine and nothing else, by id, paged', async () => {
      const first = await fresh.listMachines({ limit: 3 });
      expect(first.items.map((m) => m.id)).toEqual(['lm-a', 'lm-claimed', 'lm-early']);
      const rest = await fresh.listMachines({ limit: 3, nextToken: first.nextToken });
      expect(rest.items.map((m) => m.id)).toEqual(['lm-late']);
      expect(rest.nextToken).toBeUndefined();
    });

    it('listMachines reads the racks by name, each by id, whatever the page size; a page may stop inside a rack', async () => {
      const store = await newStore();
      const placed = [
        ['r2', 'lr-b'],
        ['r1', 'lr-z'],
        ['r1', 'lr-a'],
        ['r3', 'lr-c'],
        ['r2', 'lr-a2'],
        ['r10', 'lr-d'],
      ] as const;
      const machines = placed.map(([rack, id]) => machine(id, { rack, machineType: rack === 'r3' ? 'h100' : 'gb200' }));
      await store.commit({ machines: machines.map(create), history: [] });
      await catalogue(machines, store);
      for (const limit of [1, 2, 3, 4, 10]) {
        const ids: string[] = [];
        let nextToken: string | undefined;
        do {
          const page = await store.listMachines({ limit, nextToken });
          expect(page.items.length).toBeLessThanOrEqual(limit);
          ids.push(...page.items.map((m) => m.id));
          nextToken = page.nextToken;
        } while (nextToken);
        expect(ids).toEqual(['lr-a', 'lr-z', 'lr-d', 'lr-a2', 'lr-b', 'lr-c']);
      }
    });

    it('machinesAwaitingRepair: claimed repairs first, then unclaimed ones, each stage oldest first', async () => {
      expect((await fresh.machinesAwaitingRepair({ limit: 10 })).items.map((m) => m.id)).toEqual(['lm-claimed', 'lm-early', 'lm-late']);
    });

    it('repairsToWatch: every claimed repair, then the unclaimed requests older than the cut-off, oldest first', async () => {
      expect((await fresh.repairsToWatch(at(30 * 60_000))).map((m) => m.id)).toEqual(['lm-claimed', 'lm-early']);
      expect((await fresh.repairsToWatch(at(0))).map((m) => m.id)).toEqual(['lm-claimed']);
    });

    it('a page that ends exactly at the limit still carries a token, and the page after it is empty', async () => {
      const first = await fresh.listMachines({ limit: 4 });
      expect(first.items).toHaveLength(4);
      expect(first.nextToken).toEqual(expect.any(String));
      expect(await fresh.listMachines({ limit: 4, nextToken: first.nextToken })).toEqual({ items: [], nextToken: undefined });
    });

    it("another listing's token is refused with the 422 Rejection", async () => {
      const machines = await fresh.listMachines({ limit: 1 });
      const thrown = await rejectionOf(fresh.listInstances('acme', { limit: 1, nextToken: machines.nextToken }));
      expect(thrown).toBeInstanceOf(Rejection);
      expect(thrown).toMatchObject({ status: 422, code: 'invalid-page-token' });
    });
  });
}
