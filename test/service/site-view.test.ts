import { describe, expect, it } from 'vitest';
import { createInstance } from '#services/instances.ts';
import { registerMachines } from '#services/machines.ts';
import { SITE_VIEW_TTL_MS } from '#services/site-view.ts';
import { beat, harness, rejection, siteWith, tenant } from '#test/support/service-harness.ts';
import { ops } from '#test/support/fixtures.ts';

const alice = tenant('acme', 'alice');

/** Counts the reads of the site's records (catalog, roster time) a create makes. */
function countSiteReads(h: ReturnType<typeof harness>) {
  const reads = { site: 0 };
  const getRecords = h.store.getRecords.bind(h.store);
  h.store.getRecords = async (ids) => (ids.catalog || ids.siteHeartbeat ? reads.site++ : 0, getRecords(ids));
  return reads;
}

describe('the site view creates share', () => {
  it('is read once per container within its lifetime, and again after it', async () => {
    const h = harness();
    await siteWith(h, { gb200: 3 });
    const reads = countSiteReads(h);
    await createInstance(h.ctx, alice, { machineType: 'gb200' });
    await createInstance(h.ctx, alice, { machineType: 'gb200' });
    expect(reads).toEqual({ site: 1 });
    h.clock.advance(SITE_VIEW_TTL_MS);
    await createInstance(h.ctx, alice, { machineType: 'gb200' });
    expect(reads).toEqual({ site: 2 });
  });

  it('never refuses a type registered since it was read: a 422 is confirmed on a fresh read', async () => {
    const h = harness();
    await siteWith(h, { gb200: 1 });
    await createInstance(h.ctx, alice, { machineType: 'gb200' });
    await registerMachines(h.ctx, [{ id: 'h100-1', machineType: 'h100', rack: 'r1' }], ops);
    await beat(h, ['gb200-1', 'h100-1']);
    expect(await createInstance(h.ctx, alice, { machineType: 'h100' })).toMatchObject({ machineId: 'h100-1' });
    expect(await rejection(createInstance(h.ctx, alice, { machineType: 'a100' }))).toMatchObject({ status: 422, code: 'unknown-machine-type' });
  });

  it('never answers no-capacity from a roster time older than the latest beat', async () => {
    const h = harness();
    await registerMachines(h.ctx, [{ id: 'gb200-1', machineType: 'gb200', rack: 'r1' }], ops);
    // No beat yet: the machine is not live, and the view read now has no roster time.
    expect(await rejection(createInstance(h.ctx, alice, { machineType: 'gb200' }))).toMatchObject({ status: 409, code: 'no-capacity' });
    await beat(h, ['gb200-1']);
    expect(await createInstance(h.ctx, alice, { machineType: 'gb200' })).toMatchObject({ machineId: 'gb200-1' });
  });
});
