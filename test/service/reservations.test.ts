import { describe, expect, it } from 'vitest';
import type { Machine } from '#domain/core/model.ts';
import { reservationReconciler } from '#reconcilers/reservation.ts';
import { createInstance } from '#services/instances.ts';
import { SITE_VIEW_TTL_MS } from '#services/site-view.ts';
import { createReservation, releaseReservation } from '#services/reservations.ts';
import { ops } from '#test/support/fixtures.ts';
import { harness, reconcile, siteWith, tenant, type Harness } from '#test/support/service-harness.ts';

// Reservations on the in-memory store: a large one recorded at once and driven by the due index (so a crash between
// steps loses nothing), a step that loses its race decided again, and creates that take the org's reserved machines.

const due = async (h: Harness) => (await h.store.dueEntities(h.clock.now(), { limit: 100 })).items;

/** One step of the reconciler, committed, as a pass that crashes right after its commit leaves it. */
async function oneStep(h: Harness, id: string): Promise<void> {
  const snapshot = await reservationReconciler.load(h.ctx, id);
  const decision = reservationReconciler.decide(snapshot!);
  await h.store.commit(decision.change!);
}

describe('a large reservation', () => {
  it('is due until done: a crash between steps is finished by the sweep, and it ends holding exactly what it asked for', async () => {
    const h = harness();
    await siteWith(h, { gb200: 120 });
    const pending = await createReservation(h.ctx, { org: 'acme', machineType: 'gb200', count: 100 }, ops);
    expect(pending).toMatchObject({ state: 'Pending', wanted: 100, machineIds: [] });
    expect(await due(h)).toContainEqual({ entity: 'reservation', id: pending.id });

    await oneStep(h, pending.id);
    const partway = (await h.store.getReservation(pending.id))!;
    expect(partway.machineIds).toHaveLength(49);
    expect(await due(h)).toContainEqual({ entity: 'reservation', id: pending.id });

    // The sweep: whatever is due, reconciled.
    for (const entry of await due(h)) if (entry.entity === 'reservation') await reconcile(h.ctx, { entity: 'reservation', id: entry.id });
    const active = (await h.store.getReservation(pending.id))!;
    expect(active).toMatchObject({ state: 'Active' });
    expect(new Set(active.machineIds).size).toBe(100);
    expect(await due(h)).not.toContainEqual({ entity: 'reservation', id: pending.id });
    const machines = [...(await h.store.getMachines(active.machineIds)).values()];
    expect(machines.every((m) => m.reservation?.id === pending.id)).toBe(true);
  });

  it('whose step loses a machine to a create decides again without it, and never holds a machine with an instance', async () => {
    const h = harness();
    await siteWith(h, { gb200: 60 });
    const pending = await createReservation(h.ctx, { org: 'acme', machineType: 'gb200', count: 55 }, ops);
    // Just before the first step commits, a rival takes one of the machines it read.
    h.store.loseCommit('machines', {
      rival: async (store, change) => {
        const taken = change!.machines![0]!.before as Machine;
        await store.commit({ machines: [{ before: taken, after: { ...taken, state: 'Assigned', instanceId: 'i-rival' } }], history: [] });
      },
    });
    await reconcile(h.ctx, { entity: 'reservation', id: pending.id });
    const active = (await h.store.getReservation(pending.id))!;
    expect(active.state).toBe('Active');
    const machines = [...(await h.store.getMachines(active.machineIds)).values()];
    expect(machines).toHaveLength(55);
    expect(machines.some((m) => m.instanceId === 'i-rival')).toBe(false);
  });

  it("released while its machines are the org's: a create on one keeps its instance, the machine no longer reserved", async () => {
    const h = harness();
    await siteWith(h, { gb200: 4 });
    const reserved = await createReservation(h.ctx, { org: 'acme', machineType: 'gb200', count: 2 }, ops);
    expect(reserved.state).toBe('Active');
    const instance = await createInstance(h.ctx, tenant('acme'), { machineType: 'gb200' });
    expect(reserved.machineIds).toContain(instance.machineId);
    const released = await releaseReservation(h.ctx, reserved.id, ops);
    expect(released.state).toBe('Released');
    const held = (await h.store.getMachine(instance.machineId))!;
    expect(held).toMatchObject({ instanceId: instance.id, state: 'Assigned' });
    expect(held.reservation).toBeUndefined();
  });

  it("an org's creates take its reserved machines first; a pool read empty is skipped only for the site view's life", async () => {
    const h = harness();
    await siteWith(h, { gb200: 8 });
    const before = await createInstance(h.ctx, tenant('acme'), { machineType: 'gb200' });
    const reserved = await createReservation(h.ctx, { org: 'acme', machineType: 'gb200', count: 2 }, ops);
    expect(reserved.machineIds).not.toContain(before.machineId);
    // Another org never lands on them.
    const others = await Promise.all([1, 2, 3].map(() => createInstance(h.ctx, tenant('globex', 'bob'), { machineType: 'gb200' })));
    expect(others.map((i) => i.machineId).filter((id) => reserved.machineIds.includes(id))).toEqual([]);
    // Two shared machines are still free: acme's next creates, once the view that found its pool empty is gone, take
    // its reserved ones.
    h.clock.advance(SITE_VIEW_TTL_MS);
    const mine = await Promise.all([1, 2].map(() => createInstance(h.ctx, tenant('acme'), { machineType: 'gb200' })));
    expect(mine.map((i) => i.machineId).sort()).toEqual([...reserved.machineIds].sort());
  });
});
