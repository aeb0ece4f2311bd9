import { describe, expect, it } from 'vitest';
import type { Change } from '#domain/core/change.ts';
import { createInstance, LAST_TRY_RESERVE_MS } from '#services/instances.ts';
import { registerMachines } from '#services/machines.ts';
import type { FleetStore } from '#store/port.ts';
import { beat, harness, siteWith, tenant, type Harness } from '#test/support/service-harness.ts';
import { ops } from '#test/support/fixtures.ts';

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

  it('a burst on a nearly full type, on reads slow enough to use up the time before the deadline: a machine or no-capacity each', async () => {
    const h = harness();
    const racks = Array.from({ length: 40 }, (_, r) => `rack-${String(r).padStart(2, '0')}`);
    const onRacks = (names: string[]) => names.flatMap((rack) => Array.from({ length: 20 }, (_, i) => ({ id: `${rack}-${i}`, machineType: 'gb200', rack })));
    // Every rack full but four, spread among them: registered after the others are taken.
    const freeRacks = ['rack-05', 'rack-15', 'rack-25', 'rack-35'];
    const held = onRacks(racks.filter((rack) => !freeRacks.includes(rack)));
    await registerMachines(h.ctx, held, ops);
    await beat(
      h,
      held.map((m) => m.id),
    );
    await Promise.all(held.map(() => createInstance(h.ctx, tenant('filler', 'f'), { machineType: 'gb200' })));
    const free = onRacks(freeRacks);
    await registerMachines(h.ctx, free, ops);
    await beat(
      h,
      [...held, ...free].map((m) => m.id),
    );
    // Each read of the index takes a while, as a read through many racks does on a busy site.
    const allocatableMachineIds = h.store.allocatableMachineIds.bind(h.store);
    h.store.allocatableMachineIds = async (...read) => {
      await new Promise((r) => setTimeout(r, 40));
      return allocatableMachineIds(...read);
    };
    // Time for a read or two before the reserve for the last try is reached.
    const ctx = { ...h.ctx, deadline: Date.now() + LAST_TRY_RESERVE_MS + 100 };
    const answers = await outcomes(Array.from({ length: 240 }, () => createInstance(ctx, alice, { machineType: 'gb200' })));
    expect(answers.filter((a) => a === 'created')).toHaveLength(80);
    expect(answers.filter((a) => a === 'no-capacity')).toHaveLength(160);
  });
});
