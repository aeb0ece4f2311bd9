import { beforeAll, describe, expect, it } from 'vitest';
import { auditEntry, type AuditEntry } from '#domain/events/audit.ts';
import { applyDelta, shardOf, summaryChange, type SummaryShard } from '#domain/machines/fleet-summary.ts';
import type { Machine } from '#domain/core/model.ts';
import { Rejection } from '#domain/core/rejection.ts';
import { iso } from '#domain/core/time.ts';
import { StaleWriteError, type FleetStore } from '#store/port.ts';
import type { AuditFilter } from '#store/aggregates/audit.ts';
import { summaryOfOne } from '../fixtures.ts';
import type { ContractKit } from './kit.ts';

export function auditAndSummaryContract(kit: ContractKit): void {
  const { at, machine, create, rejectionOf, newStore } = kit;

  describe('audit log', () => {
    let fresh: FleetStore;
    const entry = (ms: number, actor: string, target: string, requestId = `req-${ms}`): AuditEntry =>
      auditEntry({ actor, requestId }, at(ms), 'labels-changed', target, { before: { a: '1' }, after: { a: String(ms) } });
    // Written oldest first; two at the same instant, which must not overwrite each other.
    const written = [
      entry(0, 'ops', 'machines/au-1'),
      entry(1_000, 'alice', 'machines/au-1'),
      entry(2_000, 'ops', 'tenants/acme'),
      entry(3_000, 'ops', 'machines/au-2', 'req-same-a'),
      entry(3_000, 'alice', 'machines/au-1', 'req-same-b'),
    ];
    const newestFirst = (keep: (e: AuditEntry) => boolean = () => true) => written.filter(keep).reverse();
    /** Newest first; entries of the same instant may come in either order (their keys end in a unique suffix). */
    const expectListed = (listed: AuditEntry[], expected: AuditEntry[]) => {
      expect(listed.map((e) => e.at)).toEqual(expected.map((e) => e.at));
      const byRequest = (entries: AuditEntry[]) => [...entries].sort((a, b) => a.requestId.localeCompare(b.requestId));
      expect(byRequest(listed)).toEqual(byRequest(expected));
    };
    /** Every page of a listing, `limit` at a time. */
    const allPages = async (filter: AuditFilter, limit: number) => {
      const items: AuditEntry[] = [];
      let nextToken: string | undefined;
      do {
        const page = await fresh.listAudit(filter, { limit, nextToken });
        expect(page.items.length).toBeLessThanOrEqual(limit);
        items.push(...page.items);
        nextToken = page.nextToken;
      } while (nextToken);
      return items;
    };

    beforeAll(async () => {
      fresh = await newStore();
      await fresh.commit({ machines: [create(machine('au-1'))], history: [] });
      for (const audit of written) await fresh.commit({ history: [], audit });
    });

    it('an entry is written with the change it audits, as it was given', async () => {
      const read = (await fresh.getMachine('au-1'))!;
      const audit = entry(4_000, 'ops', 'machines/au-1', 'req-with-change');
      await fresh.commit({ machines: [{ before: read, after: { ...read, labels: { a: '4000' } } }], history: [], audit });
      expect((await fresh.getMachine('au-1'))!.labels).toEqual({ a: '4000' });
      expect((await fresh.listAudit({ target: 'machines/au-1' }, { limit: 1 })).items).toEqual([audit]);
      written.push(audit);
    });

    it('a change that loses its race writes no audit entry either', async () => {
      const stale = (await fresh.getMachine('au-1'))!;
      await fresh.commit({ machines: [{ before: stale, after: { ...stale, rack: 'r9' } }], history: [] });
      const audit = entry(5_000, 'ops', 'machines/au-1', 'req-lost');
      expect(await rejectionOf(fresh.commit({ machines: [{ before: stale, after: { ...stale, rack: 'r8' } }], history: [], audit }))).toBeInstanceOf(
        StaleWriteError,
      );
      expect((await allPages({}, 500)).map((e) => e.requestId)).not.toContain('req-lost');
    });

    it('lists every entry newest first, paged', async () => {
      expectListed(await allPages({}, 2), newestFirst());
    });

    it('filters by actor, by target, by both and by time, each paged', async () => {
      const since = iso(at(2_000));
      expectListed(
        await allPages({ actor: 'alice' }, 1),
        newestFirst((e) => e.actor === 'alice'),
      );
      expectListed(
        await allPages({ target: 'machines/au-1' }, 2),
        newestFirst((e) => e.target === 'machines/au-1'),
      );
      expectListed(
        await allPages({ target: 'machines/au-1', actor: 'ops' }, 1),
        newestFirst((e) => e.target === 'machines/au-1' && e.actor === 'ops'),
      );
      expectListed(
        await allPages({ since }, 2),
        newestFirst((e) => e.at >= since),
      );
      expectListed(
        await allPages({ actor: 'ops', since }, 2),
        newestFirst((e) => e.actor === 'ops' && e.at >= since),
      );
      expectListed(
        await allPages({ target: 'machines/au-1', since }, 2),
        newestFirst((e) => e.target === 'machines/au-1' && e.at >= since),
      );
      expect(await allPages({ target: 'machines/nobody' }, 10)).toEqual([]);
    });

    it("another filter's token is refused with the 422 Rejection", async () => {
      const everyEntry = await fresh.listAudit({}, { limit: 1 });
      const thrown = await rejectionOf(fresh.listAudit({ actor: 'ops' }, { limit: 1, nextToken: everyEntry.nextToken }));
      expect(thrown).toBeInstanceOf(Rejection);
      expect(thrown).toMatchObject({ status: 422, code: 'invalid-page-token' });
    });
  });

  describe('fleet summary aggregates', () => {
    /** The summary reads the counter items of the catalog's types: these machines join it as a registration does. */
    const catalogued = (...machines: Machine[]) => kit.catalogue(machines);

    it('a rack and its shard are written together, guarded by version; racks page by name, one shard at a time', async () => {
      const rackMachines = ['sum-r1', 'sum-r2', 'sum-r3'].map((rack) => machine(`${rack}-m`, { machineType: 'sumtype', rack, version: 3 }));
      const racks = rackMachines.map((m) => summaryChange(summaryOfOne(m, null, null))!);
      for (const change of racks) {
        const pair = change.fleetSummary!.shards[0]!;
        const stored = await kit.store.getSummaryShard('sumtype', pair.after.shard);
        await kit.store.commit({
          ...change,
          fleetSummary: {
            racks: change.fleetSummary!.racks,
            shards: [{ before: stored, after: { ...pair.after, counters: applyDelta(stored?.counters ?? {}, pair.after.counters) } }],
          },
        });
      }
      const rack = (await kit.store.getSummaryItems([{ machineType: 'sumtype', rack: 'sum-r1' }], [])).racks[0]!;
      expect(rack).toMatchObject({ machineType: 'sumtype', rack: 'sum-r1', version: 0, machines: { 'sum-r1-m': { version: 3, state: 'Ready', live: true } } });
      // Counter items are read by key, for the types the catalog has.
      expect((await kit.store.summaryShards()).filter((s) => s.machineType === 'sumtype')).toEqual([]);
      await catalogued(...rackMachines);
      const shards = (await kit.store.summaryShards()).filter((s) => s.machineType === 'sumtype');
      expect(shards.reduce((n, s) => n + (s.counters.machines ?? 0), 0)).toBe(3);

      // The domain counters are read only when asked for.
      const domainShard: SummaryShard = {
        machineType: 'sumdomains',
        shard: 0,
        counters: { machines: 1 },
        domainCounters: { 'domain|d1|machines': 1 },
        version: 0,
      };
      await kit.store.commit({ fleetSummary: { racks: [], shards: [{ before: null, after: domainShard }] }, history: [] });
      await catalogued(machine('sumdomains-m', { machineType: 'sumdomains', rack: 'sumdomains-r' }));
      const ofType = (read: SummaryShard[]) => read.filter((s) => s.machineType === 'sumdomains');
      expect(ofType(await kit.store.summaryShards())).toEqual([{ machineType: 'sumdomains', shard: 0, counters: { machines: 1 }, version: 0 }]);
      expect(ofType(await kit.store.summaryShards({ nvlinkDomains: true }))).toEqual([domainShard]);

      // Machines are read in the same batch when asked for; unknown ones are left out.
      await kit.store.commit({ machines: [create(machine('sum-read-m', { machineType: 'sumtype', rack: 'sum-r1' }))], history: [] });
      const together = await kit.store.getSummaryItems(
        [{ machineType: 'sumtype', rack: 'sum-r1' }],
        [{ machineType: 'sumtype', shard: shardOf('sum-r1') }],
        ['sum-read-m', 'sum-nobody'],
      );
      expect(together.racks.map((r) => r.rack)).toEqual(['sum-r1']);
      expect(together.shards.map((s) => s.shard)).toEqual([shardOf('sum-r1')]);
      expect([...together.machines.keys()]).toEqual(['sum-read-m']);
      expect(together.machines.get('sum-read-m')).toMatchObject({ id: 'sum-read-m', machineType: 'sumtype', version: 0 });
      expect((await kit.store.getSummaryItems([], [])).machines.size).toBe(0);

      // A second writer from the same read loses, and the shard is not touched by the lost transaction.
      const stale = summaryChange(summaryOfOne(machine('sum-r1-m', { machineType: 'sumtype', rack: 'sum-r1', version: 4 }), { ...rack, version: -5 }, null))!;
      const shardBefore = await kit.store.getSummaryShard('sumtype', stale.fleetSummary!.shards[0]!.after.shard);
      expect(
        await rejectionOf(
          kit.store.commit({
            ...stale,
            fleetSummary: {
              ...stale.fleetSummary!,
              racks: [{ before: { ...rack, version: 7 }, after: stale.fleetSummary!.racks[0]!.after }],
              shards: [{ before: shardBefore, after: { ...shardBefore!, counters: {} } }],
            },
          }),
        ),
      ).toBeInstanceOf(StaleWriteError);
      expect(await kit.store.getSummaryShard('sumtype', shardBefore!.shard)).toEqual(shardBefore);

      const first = await kit.store.listRackAggregates('sumtype', { limit: 2 });
      const second = await kit.store.listRackAggregates('sumtype', { limit: 2, nextToken: first.nextToken });
      expect([...first.items, ...second.items].map((r) => r.rack)).toEqual(['sum-r1', 'sum-r2', 'sum-r3']);
      // A rack a page at a time, by name; a catalogued rack with no aggregate yet is absent (its page comes back empty).
      await catalogued(machine('sum-r2-bare-m', { machineType: 'sumtype', rack: 'sum-r2-bare' }));
      const oneByOne: string[] = [];
      let nextToken: string | undefined;
      let pages = 0;
      do {
        const page = await kit.store.listRackAggregates('sumtype', { limit: 1, nextToken });
        oneByOne.push(...page.items.map((r) => r.rack));
        nextToken = page.nextToken;
        pages += 1;
      } while (nextToken);
      expect(oneByOne).toEqual(['sum-r1', 'sum-r2', 'sum-r3']);
      expect(pages).toBe(4);
      const shard = shardOf('sum-r2');
      expect((await kit.store.listRackAggregates('sumtype', { limit: 10, shard })).items.every((r) => shardOf(r.rack) === shard)).toBe(true);
      expect((await kit.store.listRackAggregates('sumtype', { limit: 10, shard })).items.map((r) => r.rack)).toContain('sum-r2');
    });

    it("racks are read by key through the catalog's: a page reads at most 100, however large its limit; another listing's token is refused", async () => {
      const store = await newStore();
      const racks = Array.from({ length: 103 }, (_, i) => `page-r${String(i).padStart(3, '0')}`);
      await kit.catalogue(
        racks.map((rack) => machine(`${rack}-m`, { machineType: 'pagetype', rack })),
        store,
      );
      // Every other catalogued rack has an aggregate.
      const aggregated = racks.filter((_, i) => i % 2 === 0);
      const aggregates = aggregated.map((rack) => ({ before: null, after: { machineType: 'pagetype', rack, machines: {}, version: 0 } }));
      await store.commit({ fleetSummary: { racks: aggregates, shards: [] }, history: [] });

      const first = await store.listRackAggregates('pagetype', { limit: 500 });
      expect(first.items.map((r) => r.rack)).toEqual(aggregated.filter((rack) => rack < racks[100]!));
      const rest = await store.listRackAggregates('pagetype', { limit: 500, nextToken: first.nextToken });
      expect(rest.items.map((r) => r.rack)).toEqual(aggregated.filter((rack) => rack >= racks[100]!));
      expect(rest.nextToken).toBeUndefined();

      const refused = async (listed: Promise<unknown>) => expect(await rejectionOf(listed)).toMatchObject({ status: 422, code: 'invalid-page-token' });
      await refused(store.listRackAggregates('othertype', { limit: 10, nextToken: first.nextToken }));
      await refused(store.listRackAggregates('pagetype', { limit: 10, shard: 0, nextToken: first.nextToken }));
      const decoded = JSON.parse(Buffer.from(first.nextToken!, 'base64url').toString('utf8')) as Record<string, unknown>;
      const altered = (edit: Record<string, unknown>) => Buffer.from(JSON.stringify({ ...decoded, ...edit })).toString('base64url');
      for (const edit of [{ token: 'x' }, { partition: '' }, { partition: 7 }, { partition: 'x'.repeat(1025) }]) {
        await refused(store.listRackAggregates('pagetype', { limit: 10, nextToken: altered(edit) }));
      }
    });
  });
}
