import { describe, expect, it } from 'vitest';
import { bucketInPart, bucketOf, type RosterPart } from '#domain/machines/heartbeat.ts';
import { rosterStale } from '#domain/core/health.ts';
import { iso } from '#domain/core/time.ts';
import { receiveHeartbeat } from '#services/heartbeats.ts';
import { heartbeatViewOf } from '#runtime/heartbeat-view.ts';
import { registerMachines } from '#services/machines.ts';
import { harness, reconcile, rejection, type Harness } from '#test/support/service-harness.ts';
import { ops } from '#test/support/fixtures.ts';

// A roster too large for one beat, sent in parts: each part keeps its own time, and the roster is as old as its
// oldest part.

const ids = Array.from({ length: 24 }, (_, i) => `m-${i}`);
const partOf = (part: RosterPart) => ids.filter((id) => bucketInPart(bucketOf(id), part));
const halves: [RosterPart, RosterPart] = [
  { index: 0, count: 2 },
  { index: 1, count: 2 },
];

async function registered() {
  const h = harness();
  await registerMachines(
    h.ctx,
    ids.map((id) => ({ id, machineType: 'gb200', rack: 'r1' })),
    ops,
  );
  return h;
}

async function beatPart(h: Harness, part: RosterPart, listed = partOf(part)) {
  const result = await receiveHeartbeat(h.ctx, listed, new Map(), part);
  await Promise.all(result.changedBuckets.map((id) => reconcile(h.ctx, { entity: 'roster-bucket', id })));
  return result;
}

const live = async (h: Harness) =>
  (await Promise.all(ids.map((id) => h.store.getMachine(id))))
    .filter((m) => m!.heartbeatLive)
    .map((m) => m!.id)
    .sort();
const timeoutMs = (h: Harness) => h.ctx.config.heartbeat.timeout_seconds * 1000;

describe('a roster in parts', () => {
  it('each part touches only its own buckets; together they make the whole fleet live', async () => {
    const h = await registered();
    expect(partOf(halves[0]).length).toBeGreaterThan(0);
    expect(partOf(halves[1]).length).toBeGreaterThan(0);
    const first = await beatPart(h, halves[0]);
    expect(first.changedBuckets.every((bucket) => bucketInPart(bucket, halves[0]))).toBe(true);
    expect(await live(h)).toEqual([...partOf(halves[0])].sort());
    await beatPart(h, halves[1]);
    expect(await live(h)).toEqual([...ids].sort());
    expect(await h.store.getSiteHeartbeat()).toMatchObject({
      machineCount: ids.length,
      parts: { count: 2, machineCounts: [partOf(halves[0]).length, partOf(halves[1]).length] },
    });
  });

  it('is as old as its oldest part: a part the agent stops sending makes the roster stale', async () => {
    const h = await registered();
    await beatPart(h, halves[0]);
    await beatPart(h, halves[1]);
    const silentSince = iso(h.clock.now());
    for (let t = 0; t < 4; t++) {
      h.clock.advance(timeoutMs(h) / 3);
      await beatPart(h, halves[0]);
    }
    const stored = await h.store.getSiteHeartbeat();
    expect(stored!.rosterSeenAt).toBe(silentSince);
    expect(stored!.parts!.seenAt[0]).toBe(iso(h.clock.now()));
    expect(rosterStale(heartbeatViewOf(h.ctx, stored), h.clock.now())).toBe(true);
  });

  it("a machine leaving one part leaves; the other part's machines stay live", async () => {
    const h = await registered();
    await beatPart(h, halves[0]);
    await beatPart(h, halves[1]);
    const [leaving, ...staying] = partOf(halves[0]);
    h.clock.advance(1000);
    await beatPart(h, halves[0], staying);
    expect(await live(h)).toEqual(ids.filter((id) => id !== leaving).sort());
  });

  it("refuses a part that lists another part's machine with 422, and writes nothing", async () => {
    const h = await registered();
    const refused = await rejection(receiveHeartbeat(h.ctx, [...partOf(halves[0]), partOf(halves[1])[0]!], new Map(), halves[0]));
    expect(refused).toMatchObject({ status: 422, code: 'roster-part-mismatch' });
    expect(await h.store.getSiteHeartbeat()).toBeNull();
    expect(await h.store.getRosterDigests()).toBeNull();
  });

  it("splitting a whole roster into parts keeps the parts not yet seen at the whole roster's time", async () => {
    const h = await registered();
    await receiveHeartbeat(h.ctx, ids);
    const whole = iso(h.clock.now());
    h.clock.advance(1000);
    await beatPart(h, halves[1]);
    expect((await h.store.getSiteHeartbeat())!.rosterSeenAt).toBe(whole);
    expect((await h.store.getSiteHeartbeat())!.parts!.seenAt).toEqual([whole, iso(h.clock.now())]);
  });
});
