import { describe, expect, it, vi } from 'vitest';
import { createSweepHandler } from '#handlers/sweep.ts';
import { startRun } from '#reconcilers/runner.ts';
import { createInstance, releaseInstance } from '#services/instances.ts';
import { harness, siteWith, tenant } from '#test/support/service-harness.ts';

const alice = tenant('acme', 'alice');

describe("the sweep's fleet metrics", () => {
  it('publishes the gauges of every machine type, the breaker and the roster age after each sweep', async () => {
    const h = harness();
    await siteWith(h, { gb200: 3, h100: 1 });
    await createInstance(h.ctx, alice, { machineType: 'gb200' });
    const released = await createInstance(h.ctx, alice, { machineType: 'gb200' });
    // The issue trips the breaker: a 4-machine fleet allows no quarantine at once.
    await releaseInstance(h.ctx, alice, released.id, { issue: { category: 'HARDWARE', summary: 'ECC errors' } });
    h.clock.advance(12_000);
    // What the stream does with those commits: the fleet summary the gauges read follows the machines.
    const machines = ['gb200-1', 'gb200-2', 'gb200-3', 'h100-1'];
    await startRun(h.ctx).reconcile(machines.map((id) => ({ entity: 'fleet-summary', id })));

    await createSweepHandler(h.ctx, async () => {})(undefined);

    const text = h.metrics.render();
    expect(text).toContain('fleetward_machines{machine_type="gb200"} 3\n');
    expect(text).toContain('fleetward_machines{machine_type="h100"} 1\n');
    expect(text).toContain('fleetward_machines_assigned{machine_type="gb200"} 1\n');
    expect(text).toContain('fleetward_machines_quarantined{machine_type="gb200"} 1\n');
    expect(text).toContain('fleetward_machines_allocatable{machine_type="gb200"} 1\n');
    expect(text).toContain('fleetward_machines_allocatable{machine_type="h100"} 1\n');
    expect(text).toContain('fleetward_machines_heartbeat_stale{machine_type="gb200"} 0\n');
    expect(h.gauges.get('RepairBreakerTripped')).toBe(1);
    expect(h.gauges.get('ReplacementsInFlight')).toBe(0);
    expect(h.gauges.get('SiteAgentRosterAgeSeconds')).toBe(12);
  });

  it('reads what its checks and gauges share once per scheduled run: heartbeat and safety in one batch, shards and repair index once each', async () => {
    const h = harness();
    await siteWith(h, { gb200: 1 });
    const spies = (['getRecords', 'getSiteHeartbeat', 'getSafety', 'summaryShards', 'repairsToWatch'] as const).map(
      (name) => [name, vi.spyOn(h.ctx.store, name)] as const,
    );

    await createSweepHandler(h.ctx, async () => {})(undefined);

    expect(Object.fromEntries(spies.map(([name, spy]) => [name, spy.mock.calls.length]))).toEqual({
      getRecords: 1,
      getSiteHeartbeat: 0,
      getSafety: 0,
      summaryShards: 1,
      repairsToWatch: 1,
    });
    expect(h.gauges.has('SiteAgentSilent')).toBe(true);
    expect(h.gauges.has('SiteAgentRosterAgeSeconds')).toBe(true);
    expect(h.gauges.has('RepairsStuck')).toBe(true);
  });

  it('counts a check that fails, logs it and still does the rest of the tick', async () => {
    const h = harness();
    await siteWith(h, { gb200: 2 });
    await startRun(h.ctx).reconcile(['gb200-1', 'gb200-2'].map((id) => ({ entity: 'fleet-summary', id })));
    // The summary's drift repair cannot read its shard (throttled, say).
    vi.spyOn(h.ctx.store, 'getSummaryItems').mockRejectedValue(new Error('throttled'));

    expect(await createSweepHandler(h.ctx, async () => {})(undefined)).toEqual({ due: 0, failed: 1 });

    expect(h.logged).toContainEqual(expect.objectContaining({ level: 'error', message: 'sweep reconcile failed', fields: { error: 'Error: throttled' } }));
    expect(h.gauges.get('RepairsStuck')).toBe(0);
    expect(h.metrics.render()).toContain('fleetward_machines{machine_type="gb200"} 2\n');
  });
});
