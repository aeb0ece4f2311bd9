import { describe, expect, it } from 'vitest';
import type { OrgCapacityShard } from '#domain/capacity/org-capacity.ts';
import { CAPACITY_POINTS_PER_RUN, takeCapacityPoints } from '#reconcilers/capacity-history.ts';
import { loadHeartbeatView } from '#runtime/heartbeat-view.ts';
import { listCapacityHistory } from '#services/capacity-history.ts';
import { harness, type Harness } from '#test/support/service-harness.ts';

// An org's capacity history: the sweep takes a point per org per interval from the org's counters, once however many
// runs overlap, and the route reads an org's points from `since` on.

const INTERVAL_MS = 300_000;

/** Sets an org's first counter shard to `counters`, as the stream would leave it. */
async function countersOf(h: Harness, org: string, counters: Record<string, number>) {
  const before = (await h.store.orgCapacityShards(org)).find((s) => s.shard === 0) ?? null;
  const after: OrgCapacityShard = { org, shard: 0, counters, version: before?.version ?? 0 };
  await h.store.commit({ orgCapacity: { nodes: [], shards: [{ before, after }] }, history: [] });
}

const sweepRun = async (h: Harness) => (await takeCapacityPoints(h.ctx, await loadHeartbeatView(h.ctx))).taken;
const history = async (h: Harness, org: string, since?: string) => (await listCapacityHistory(h.ctx, org, { limit: 50, since })).items;

describe('capacity history', () => {
  it('takes one point per org per interval, however many runs overlap, and reads them back oldest first from since on', async () => {
    const h = harness();
    // A second into an interval: the runs a minute apart fall in the same one.
    h.clock.advance(INTERVAL_MS - (h.clock.now().getTime() % INTERVAL_MS) + 1_000);
    await countersOf(h, 'acme', { 'gb200|delivered': 3, 'gb200|reserved': 1, 'gb200|inUse': 2 });
    await countersOf(h, 'globex', { 'h100|delivered': 1 });
    const first = new Date(h.clock.now().getTime() - 1_000).toISOString();

    expect((await Promise.all([sweepRun(h), sweepRun(h), sweepRun(h)])).reduce((a, b) => a + b, 0)).toBe(2);
    h.clock.advance(60_000);
    expect(await sweepRun(h)).toBe(0);
    h.clock.advance(INTERVAL_MS);
    await countersOf(h, 'acme', { 'gb200|delivered': 4, 'gb200|inUse': 4 });
    expect(await sweepRun(h)).toBe(2);

    const acme = await history(h, 'acme');
    expect(acme.map((p) => p.at)).toEqual([first, new Date(Date.parse(first) + INTERVAL_MS).toISOString()]);
    expect(acme[0]!.byType.gb200).toEqual({
      delivered: { machines: 3, gpus: 12 },
      healthy: { machines: 0, gpus: 0 },
      reserved: { machines: 1, gpus: 4 },
      inUse: { machines: 2, gpus: 8 },
    });
    expect(acme[1]!.byType.gb200).toMatchObject({ delivered: { machines: 4 }, reserved: { machines: 0 }, inUse: { machines: 4 } });
    expect(await history(h, 'acme', acme[1]!.at)).toEqual([acme[1]]);
    expect((await history(h, 'globex')).map((p) => Object.keys(p.byType))).toEqual([['h100'], ['h100']]);
    expect(await history(h, 'initech')).toEqual([]);
  });

  it('takes at most CAPACITY_POINTS_PER_RUN orgs a run; the next runs of the interval take the rest', async () => {
    const h = harness();
    const orgs = Array.from({ length: CAPACITY_POINTS_PER_RUN + 5 }, (_, i) => `org-${i}`);
    for (const org of orgs) await countersOf(h, org, { 'gb200|delivered': 1 });
    expect([await sweepRun(h), await sweepRun(h), await sweepRun(h)]).toEqual([CAPACITY_POINTS_PER_RUN, 5, 0]);
    for (const org of orgs) expect(await history(h, org)).toHaveLength(1);
  });

  it('reads a day back by default', async () => {
    const h = harness();
    await countersOf(h, 'acme', { 'gb200|delivered': 1 });
    await sweepRun(h);
    h.clock.advance(24 * 3_600_000 + INTERVAL_MS);
    expect(await history(h, 'acme')).toEqual([]);
    expect(await history(h, 'acme', '2000-01-01T00:00:00.000Z')).toHaveLength(1);
  });
});
