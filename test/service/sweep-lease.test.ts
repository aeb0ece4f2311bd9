import { describe, expect, it } from 'vitest';
import { SWEEP_LEASE, sweep } from '#reconcilers/sweep.ts';
import { iso } from '#domain/core/time.ts';
import { harness } from '#test/support/service-harness.ts';

// Overlapping sweeps (the schedule and a follow-up, or a retried invocation) do not do the same work twice.
describe('the sweep lease', () => {
  it('lets one of two overlapping runs sweep; the other does nothing', async () => {
    const h = harness();
    const [first, second] = await Promise.all([sweep(h.ctx), sweep(h.ctx)]);
    expect([first.skipped, second.skipped].filter(Boolean)).toHaveLength(1);
    expect(first.skipped ? first : second).toEqual({ due: 0, failed: 0, skipped: true });
  });

  it('is given back when a run ends, so the next run sweeps', async () => {
    const h = harness();
    expect((await sweep(h.ctx)).skipped).toBeUndefined();
    expect((await sweep(h.ctx)).skipped).toBeUndefined();
  });

  it('held by a run that crashed, keeps others out until it expires', async () => {
    const h = harness();
    expect(await h.store.takeLease(SWEEP_LEASE, 'crashed-run', iso(new Date(h.clock.now().getTime() + 60_000)), iso(h.clock.now()))).toBe(true);
    expect((await sweep(h.ctx)).skipped).toBe(true);
    h.clock.advance(60_001);
    expect((await sweep(h.ctx)).skipped).toBeUndefined();
  });
});
