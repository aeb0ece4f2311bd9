import { describe, expect, it } from 'vitest';
import type { Change } from '#domain/core/change.ts';
import { createInstance } from '#services/instances.ts';
import type { FleetStore } from '#store/port.ts';
import { harness, siteWith, tenant, type Harness } from '#test/support/service-harness.ts';

const alice = tenant('acme', 'alice');

/** Counts the reads of the allocatable index. */
function countPageReads(h: Harness) {
  const reads = { pages: 0 };
  const allocatableMachineIds = h.store.allocatableMachineIds.bind(h.store);
  h.store.allocatableMachineIds = async (type, limit, from) => (reads.pages++, allocatableMachineIds(type, limit, from));
  return reads;
}

const outcomes = async (creates: Promise<unknown>[]) =>
  (await Promise.allSettled(creates)).map((r) => (r.status === 'fulfilled' ? 'created' : String((r.reason as { code?: string }).code)));

describe('concurrent creates of one process', () => {
  it('share reads of the allocatable index and never race each other for a machine', async () => {
    const h = harness();
    await siteWith(h, { gb200: 10 });
    const reads = countPageReads(h);
    h.store.attempts.clear();
    const answers = await outcomes(Array.from({ length: 30 }, () => createInstance(h.ctx, alice, { machineType: 'gb200' })));
    expect(answers.filter((a) => a === 'created')).toHaveLength(10);
    expect(answers.filter((a) => a === 'no-capacity')).toHaveLength(20);
    // One commit per machine: no create tried a machine another create of this process was claiming.
    expect(h.store.attempts.get('instances')).toBe(10);
    expect(reads.pages).toBeLessThan(10);
    const machines = (await h.store.listInstances('acme', { limit: 100 })).items.map((i) => i.machineId);
    expect(new Set(machines).size).toBe(10);
  });

  it('a machine whose claim lost to another process is read again and can be won by a create that waited for it', async () => {
    const h = harness();
    await siteWith(h, { gb200: 1 });
    // Another process rewrites the machine under the first claim but leaves it free: the claim fails, the machine stays.
    const rivalTouches = async (rival: FleetStore, change: Change | null) => {
      const machine = (await rival.getMachine(change!.machines![0]!.after.id))!;
      await rival.commit({ machines: [{ before: machine, after: { ...machine, labels: { touched: 'yes' } } }], history: [] });
    };
    h.store.loseCommit('instances', { rival: rivalTouches });
    const answers = await outcomes([createInstance(h.ctx, alice, { machineType: 'gb200' }), createInstance(h.ctx, alice, { machineType: 'gb200' })]);
    expect(answers.sort()).toEqual(['created', 'no-capacity']);
    expect((await h.store.getMachine('gb200-1'))!.instanceId).toBeDefined();
  });
});
