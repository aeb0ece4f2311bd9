import { describe, expect, it } from 'vitest';
import { createSweepHandler } from '#handlers/sweep.ts';
import { createMetaInstance, showMetaInstance } from '#services/meta-instances.ts';
import { registerMachines } from '#services/machines.ts';
import { DUE_PAGE, sweep, type SweepPosition } from '#reconcilers/sweep.ts';
import { followUpEvent, sweepStart } from '#reconcilers/sweep-follow-up.ts';
import { DEFAULT_CONCURRENCY } from '#reconcilers/runner.ts';
import { DUE_SHARDS } from '#store/aggregates/due.ts';
import { iso } from '#domain/core/time.ts';
import { aMachine, NOW, ops } from '#test/support/fixtures.ts';
import { beat, harness, tenant, type Harness } from '#test/support/service-harness.ts';
import { recordedMembers } from '#test/support/meta-members.ts';

// A backlog (a rack lost power, an agent outage ended) clears in one sweep: every due page, reconciled in parallel,
// while the run has time; what is left goes to a follow-up that starts where the run stopped.

const BACKLOG = 2 * DUE_PAGE + 50;

/** `count` machines in Cleanup whose DELETE is still to be sent: each is due, and its reconcile sends one DELETE. */
async function backlog(h: Harness, count = BACKLOG): Promise<{ most: number }> {
  const at = iso(h.clock.now());
  const machines = Array.from({ length: count }, (_, i) =>
    aMachine({
      id: `m-${String(i).padStart(4, '0')}`,
      state: 'Cleanup',
      instanceId: `i-${i}`,
      cleanup: { instanceId: `i-${i}`, phase: 'pending', attempts: 0 },
      createdAt: at,
      updatedAt: at,
    }),
  );
  for (let start = 0; start < machines.length; start += 50) {
    await h.store.commit({ machines: machines.slice(start, start + 50).map((after) => ({ before: null, after })), history: [] });
  }
  // Each DELETE takes a moment, so reconciles overlap as they would on a real agent; the most at once is recorded.
  let inFlight = 0;
  const gauge = { most: 0 };
  h.agent.willDelete(
    ...Array.from({ length: count }, () => async () => {
      gauge.most = Math.max(gauge.most, ++inFlight);
      await new Promise((resolve) => setTimeout(resolve, 2));
      inFlight--;
      return { kind: 'accepted' as const };
    }),
  );
  return gauge;
}

const stillDue = async (h: Harness) => (await h.store.dueEntities(h.clock.now(), { limit: 1_000 })).items.length;

describe('the sweep with a backlog', () => {
  it('reconciles every due entity in one run, page after page, several at once but no more than the runner allows', async () => {
    const h = harness();
    const deletes = await backlog(h);
    expect(await sweep(h.ctx)).toEqual({ due: BACKLOG, failed: 0 });
    expect(new Set(h.agent.deletes).size).toBe(BACKLOG);
    expect(await stillDue(h)).toBe(0);
    expect(deletes.most).toBeGreaterThan(1);
    expect(deletes.most).toBeLessThanOrEqual(DEFAULT_CONCURRENCY);
  });

  it('out of time, it stops between pages and names where a follow-up goes on; the follow-ups finish it, nothing twice', async () => {
    const h = harness();
    await backlog(h);
    const first = await sweep(h.ctx, { timeLeftMs: () => 0 });
    expect(first).toEqual({ due: DUE_PAGE, failed: 0, followUp: { now: iso(h.clock.now()), nextToken: expect.any(String) } });
    expect(await stillDue(h)).toBe(BACKLOG - DUE_PAGE);

    // Later, with the clock moved on: the follow-up reads the range its run read, from where that run stopped.
    h.clock.advance(5_000);
    const second = await sweep(h.ctx, { timeLeftMs: () => 0, from: first.followUp });
    expect(second).toMatchObject({ due: DUE_PAGE, failed: 0, followUp: { now: first.followUp!.now } });
    const third = await sweep(h.ctx, { timeLeftMs: () => 0, from: second.followUp });
    expect(third).toEqual({ due: BACKLOG - 2 * DUE_PAGE, failed: 0 });
    expect(h.agent.deletes).toHaveLength(BACKLOG);
    expect(new Set(h.agent.deletes).size).toBe(BACKLOG);
  });

  it('keeps taking pages while time is left, and stops once it is spent', async () => {
    const h = harness();
    await backlog(h);
    let checks = 0;
    // Time for two pages: the budget is asked after each page.
    const result = await sweep(h.ctx, { timeLeftMs: () => (++checks < 2 ? 1_000 : 0) });
    expect(result).toMatchObject({ due: 2 * DUE_PAGE, failed: 0, followUp: expect.any(Object) });
  });

  it('the handler hands unfinished work to a follow-up and takes it up from the follow-up event; the gauges go out once per tick', async () => {
    const h = harness();
    await backlog(h);
    const handedOff: SweepPosition[] = [];
    const handle = createSweepHandler(h.ctx, async (position) => void handedOff.push(position));

    expect(await handle({}, () => 0)).toMatchObject({ due: DUE_PAGE, followUp: expect.any(Object) });
    expect(handedOff).toHaveLength(1);
    // Its token holds where each due shard stopped, most of them part-way: still one EventBridge entry (256 KB at most).
    const { cursors } = JSON.parse(Buffer.from(handedOff[0]!.nextToken, 'base64url').toString('utf8')) as { cursors: unknown[] };
    expect(cursors.filter((cursor) => typeof cursor === 'string' && cursor !== 'done').length).toBeGreaterThan(DUE_SHARDS / 2);
    expect(Buffer.byteLength(JSON.stringify(handedOff[0]))).toBeLessThan(256 * 1024);
    // The schedule's run published the tick's gauges though it handed work off; its follow-ups publish none.
    expect(h.gauges.get('ReplacementsInFlight')).toBe(0);
    h.gauges.clear();
    await handle(followUpEvent(handedOff[0]!), () => 0);
    await handle(followUpEvent(handedOff[1]!), () => 0);
    expect(h.gauges.size).toBe(0);
    // The last run left nothing: no further hand-off.
    expect(handedOff).toHaveLength(2);
    expect(new Set(h.agent.deletes).size).toBe(BACKLOG);
    expect(await stillDue(h)).toBe(0);
  });

  it('starts from the beginning on anything but a well-formed follow-up event (the schedule invokes it with its own)', () => {
    const position = { now: iso(NOW), nextToken: 'token' };
    expect(sweepStart(followUpEvent(position))).toEqual(position);
    expect(sweepStart({})).toBeUndefined();
    expect(sweepStart(undefined)).toBeUndefined();
    expect(sweepStart({ ...followUpEvent(position), source: 'fleetward' })).toBeUndefined();
    expect(sweepStart(followUpEvent({ now: 'yesterday', nextToken: 'token' }))).toBeUndefined();
    expect(sweepStart(followUpEvent({ now: iso(NOW), nextToken: '' }))).toBeUndefined();
  });
});

describe('same-rack placement on fragmented racks', () => {
  it('finds a rack with room beyond the first page of free machines', async () => {
    const h = harness();
    // 600 racks with one free machine each sort before the one rack that has four.
    const registrations = [
      ...Array.from({ length: 600 }, (_, i) => ({ id: `frag-${i}`, machineType: 'gb200', rack: `a${String(i).padStart(4, '0')}` })),
      ...Array.from({ length: 4 }, (_, i) => ({ id: `room-${i}`, machineType: 'gb200', rack: 'z0001' })),
    ];
    await registerMachines(h.ctx, registrations, ops);
    await beat(
      h,
      registrations.map((r) => r.id),
    );

    const created = await createMetaInstance(h.ctx, tenant(), { machineType: 'gb200', minNodes: 4, placement: { sameRack: true }, labels: {} });
    expect(created).toMatchObject({ status: 'Ready', instanceIds: [expect.any(String), expect.any(String), expect.any(String), expect.any(String)] });
    const members = await recordedMembers(h.store, created.id);
    expect(members.map((i) => i.machineId).sort()).toEqual(['room-0', 'room-1', 'room-2', 'room-3']);
    expect((await showMetaInstance(h.ctx, tenant(), created.id)).placementError).toBeUndefined();
  });
});
