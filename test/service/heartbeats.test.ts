import { describe, expect, it } from 'vitest';
import { bucketOf, SITE_STALE_CHECK } from '#domain/machines/heartbeat.ts';
import { addMs, iso } from '#domain/core/time.ts';
import { createMetaInstance } from '#services/meta-instances.ts';
import { receiveHeartbeat } from '#services/heartbeats.ts';
import { registerMachines } from '#services/machines.ts';
import { sweep } from '#reconcilers/sweep.ts';
import { ROSTER_WALK_GRACE_MS } from '#reconcilers/due-times.ts';
import { beat, harness, reconcile, siteWith, tenant, type Harness } from '#test/support/service-harness.ts';
import { ops } from '#test/support/fixtures.ts';
import { recordedMembers } from '#test/support/meta-members.ts';

const ids = ['m-1', 'm-2', 'm-3'];

async function registered(h: Harness = harness()) {
  await registerMachines(
    h.ctx,
    ids.map((id) => ({ id, machineType: 'gb200', rack: 'r1' })),
    ops,
  );
  return h;
}

const timeoutMs = (h: Harness) => h.ctx.config.heartbeat.timeout_seconds * 1000;
const liveness = async (h: Harness) => Object.fromEntries(await Promise.all(ids.map(async (id) => [id, (await h.store.getMachine(id))!.heartbeatLive])));
const bucketsOf = (machineIds: string[]) => [...new Set(machineIds.map(bucketOf))].sort();

describe('receiveHeartbeat', () => {
  it('a new roster stores the changed buckets and the roster time, touching no machine; their walk makes the listed ones live', async () => {
    const h = await registered();
    const result = await receiveHeartbeat(h.ctx, ['m-1', 'm-2']);
    expect({ ...result, changedBuckets: [...result.changedBuckets].sort() }).toEqual({ stored: true, changedBuckets: bucketsOf(['m-1', 'm-2']) });
    expect(await liveness(h)).toEqual({ 'm-1': false, 'm-2': false, 'm-3': false });
    expect(await h.store.getSiteHeartbeat()).toEqual({ rosterSeenAt: iso(h.clock.now()), machineCount: 2, version: 1 });

    await startWalks(h, result.changedBuckets);
    expect(await liveness(h)).toEqual({ 'm-1': true, 'm-2': true, 'm-3': false });
  });

  it('the same roster again writes nothing until a third of the timeout passed, then only refreshes the time', async () => {
    const h = await registered();
    await beat(h, ids);
    const stored = await h.store.getSiteHeartbeat();
    const digests = await h.store.getRosterDigests();
    h.clock.advance(timeoutMs(h) / 3 - 1);
    expect(await receiveHeartbeat(h.ctx, ids)).toEqual({ stored: false, changedBuckets: [] });
    expect(await h.store.getSiteHeartbeat()).toEqual(stored);

    h.clock.advance(1);
    expect(await receiveHeartbeat(h.ctx, ids)).toEqual({ stored: true, changedBuckets: [] });
    expect(await h.store.getSiteHeartbeat()).toEqual({ ...stored, rosterSeenAt: iso(h.clock.now()), version: stored!.version + 1 });
    expect(await h.store.getRosterDigests()).toEqual(digests);
  });

  it('a machine that leaves the roster stops being live, remembered as last seen at the previous roster', async () => {
    const h = await registered();
    await beat(h, ids);
    const seen = iso(h.clock.now());
    h.clock.advance(5_000);
    expect((await beat(h, ['m-1', 'm-3'])).changedBuckets).toEqual([bucketOf('m-2')]);
    expect(await h.store.getMachine('m-2')).toMatchObject({ heartbeatLive: false, lastHeartbeatAt: seen });
    expect(await liveness(h)).toEqual({ 'm-1': true, 'm-2': false, 'm-3': true });
  });

  it('a machine registered after the roster listed it goes live: the registration has its bucket walked again', async () => {
    const h = await registered();
    await beat(h, [...ids, 'm-new']);
    await registerMachines(h.ctx, [{ id: 'm-new', machineType: 'gb200' }], ops);
    expect((await h.store.getMachine('m-new'))!.heartbeatLive).toBe(false);
    await reconcile(h.ctx, { entity: 'roster-bucket', id: bucketOf('m-new') });
    expect((await h.store.getMachine('m-new'))!.heartbeatLive).toBe(true);
  });

  it('a walk cut short (a crash, a lost race) leaves its bucket due: the sweep walks it again', async () => {
    const h = await registered();
    const { changedBuckets } = await receiveHeartbeat(h.ctx, ids);
    h.store.loseCommit('machines', { times: Infinity });
    await startWalks(h, changedBuckets);
    expect(await liveness(h)).toEqual({ 'm-1': false, 'm-2': false, 'm-3': false });

    h.store.loseCommit('machines', { times: 0 });
    // The stream has its grace to walk a changed bucket first: a sweep before it leaves the bucket alone.
    h.clock.advance(ROSTER_WALK_GRACE_MS - 1);
    await sweep(h.ctx);
    expect(await liveness(h)).toEqual({ 'm-1': false, 'm-2': false, 'm-3': false });
    h.clock.advance(1);
    await sweep(h.ctx);
    expect(await liveness(h)).toEqual({ 'm-1': true, 'm-2': true, 'm-3': true });
    for (const bucket of (await h.store.getRosterBuckets(changedBuckets)).values()) expect(bucket.appliedDigest).toBe(bucket.digest);
    // Settled: nothing of the roster is due any more.
    expect((await h.store.dueEntities(h.clock.now(), { limit: 100 })).items.filter((ref) => ref.entity === 'roster-bucket')).toEqual([]);
  });

  it('a beat that loses the roster time to another beat leaves the roster to it', async () => {
    const h = await registered();
    h.store.loseCommit('heartbeat');
    expect(await receiveHeartbeat(h.ctx, ids)).toEqual({ stored: false, changedBuckets: [] });
    expect(await h.store.getRosterDigests()).toBeNull();
  });

  it('two beats at once store the roster once between them', async () => {
    const h = await registered();
    const results = await Promise.all([beat(h, ids), beat(h, ids)]);
    expect(results.flatMap((r) => r.changedBuckets).sort()).toEqual(bucketsOf(ids));
    expect(await liveness(h)).toEqual({ 'm-1': true, 'm-2': true, 'm-3': true });
  });
});

describe('a machine that leaves the roster, under a meta-instance member', () => {
  it('is acted on at the first beat after its timeout: the beat writes the stale check, whose reaction replaces the member', async () => {
    const h = harness();
    await siteWith(h, { gb200: 3 });
    const created = await createMetaInstance(h.ctx, tenant('acme', 'alice'), { machineType: 'gb200', minNodes: 2, placement: { sameRack: false }, labels: {} });
    const [member] = await recordedMembers(h.store, created.id);
    const roster = ['gb200-1', 'gb200-2', 'gb200-3'].filter((id) => id !== member!.machineId);
    const lastSeen = h.clock.now();

    h.clock.advance(5_000);
    await beat(h, roster);
    expect((await h.store.getRosterDigests())!.nextStaleAt).toBe(iso(addMs(lastSeen, timeoutMs(h) + 1)));
    // Beats before the machine's stale time trigger nothing (and the sweep would not find it due yet).
    while (addMs(h.clock.now(), 5_000) < addMs(lastSeen, timeoutMs(h) + 1)) {
      h.clock.advance(5_000);
      await beat(h, roster);
    }
    expect(await h.store.getStaleCheck(SITE_STALE_CHECK)).toBeNull();
    expect((await h.store.getInstance(member!.id))!.status).not.toBe('Terminating');

    h.clock.advance(5_000);
    expect((await receiveHeartbeat(h.ctx, roster)).stored).toBe(true);
    expect(await h.store.getStaleCheck(SITE_STALE_CHECK)).toMatchObject({ requestedAt: iso(h.clock.now()) });
    expect((await h.store.getRosterDigests())!.nextStaleAt).toBeUndefined();
    // The stream's reaction to the check.
    await reconcile(h.ctx, { entity: 'stale-check', id: SITE_STALE_CHECK });
    expect((await h.store.getInstance(member!.id))!.status).toBe('Terminating');
    const members = await recordedMembers(h.store, created.id);
    expect(members.find((i) => i.id !== member!.id && !created.instanceIds.includes(i.id))).toMatchObject({ replacement: true });

    // The next beat has nothing left to check.
    h.clock.advance(5_000);
    await receiveHeartbeat(h.ctx, roster);
    expect((await h.store.getStaleCheck(SITE_STALE_CHECK))!.requestedAt).not.toBe(iso(h.clock.now()));
  });
});

function startWalks(h: Harness, buckets: string[]) {
  return Promise.all(buckets.map((id) => reconcile(h.ctx, { entity: 'roster-bucket', id })));
}
