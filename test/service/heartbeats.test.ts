import { describe, expect, it } from 'vitest';
import { ROSTER_RESET, rosterDigest } from '#domain/heartbeat.ts';
import { registerMachine } from '#domain/machines.ts';
import { iso } from '#domain/time.ts';
import { receiveHeartbeat } from '#services/heartbeats.ts';
import { registerMachines } from '#services/machines.ts';
import { harness, type Harness } from '#test/support/service-harness.ts';
import { ops } from '#test/support/fixtures.ts';

const ids = ['m-1', 'm-2', 'm-3'];

async function registered(h: Harness = harness()) {
  await registerMachines(h.ctx, ids.map((id) => ({ id, machineType: 'gb200', rack: 'r1' })), ops);
  return h;
}

const timeoutMs = (h: Harness) => h.ctx.config.heartbeat.timeout_seconds * 1000;
const liveness = async (h: Harness) => Object.fromEntries(await Promise.all(ids.map(async (id) => [id, (await h.store.getMachine(id))!.heartbeatLive])));

describe('receiveHeartbeat', () => {
  it('a new roster walks the machines, makes the listed ones live and stores its digest', async () => {
    const h = await registered();
    expect(await receiveHeartbeat(h.ctx, ['m-1', 'm-2'])).toEqual({ stored: true, livenessChanges: 2 });
    expect(await liveness(h)).toEqual({ 'm-1': true, 'm-2': true, 'm-3': false });
    expect(await h.store.getSiteHeartbeat()).toEqual({ rosterSeenAt: iso(h.clock.now()), digest: rosterDigest(['m-1', 'm-2']), machineCount: 2, version: 3 });
  });

  it('the same roster again writes nothing until a third of the timeout passed, then only refreshes the time', async () => {
    const h = await registered();
    await receiveHeartbeat(h.ctx, ids);
    const stored = await h.store.getSiteHeartbeat();
    h.clock.advance(timeoutMs(h) / 3 - 1);
    expect(await receiveHeartbeat(h.ctx, ids)).toEqual({ stored: false, livenessChanges: 0 });
    expect(await h.store.getSiteHeartbeat()).toEqual(stored);

    h.clock.advance(1);
    expect(await receiveHeartbeat(h.ctx, ids)).toEqual({ stored: true, livenessChanges: 0 });
    expect(await h.store.getSiteHeartbeat()).toEqual({ ...stored, rosterSeenAt: iso(h.clock.now()), version: stored!.version + 1 });
  });

  it('a machine that leaves the roster stops being live, remembered as last seen at the previous roster', async () => {
    const h = await registered();
    await receiveHeartbeat(h.ctx, ids);
    const seen = iso(h.clock.now());
    h.clock.advance(5_000);
    expect(await receiveHeartbeat(h.ctx, ['m-1', 'm-3'])).toEqual({ stored: true, livenessChanges: 1 });
    expect(await h.store.getMachine('m-2')).toMatchObject({ heartbeatLive: false, lastHeartbeatAt: seen });
    expect((await h.store.listHistory('m-2', { limit: 1 })).items[0]).toMatchObject({ action: 'heartbeat-stopped' });
  });

  it('a registration during the walk keeps the roster reset, so the next beat walks again and finds the newcomer', async () => {
    const h = await registered();
    h.store.loseCommit('machines', {
      rival: async (rival) => {
        await rival.commit({ ...registerMachine(null, { id: 'm-new', machineType: 'gb200' }, 'ops', h.clock.now())!, resetHeartbeatRoster: true });
      },
    });
    await receiveHeartbeat(h.ctx, [...ids, 'm-new']);
    expect((await h.store.getSiteHeartbeat())!.digest).toBe(ROSTER_RESET);

    expect(await receiveHeartbeat(h.ctx, [...ids, 'm-new'])).toEqual({ stored: true, livenessChanges: 1 });
    expect((await h.store.getMachine('m-new'))!.heartbeatLive).toBe(true);
    expect((await h.store.getSiteHeartbeat())!.digest).toBe(rosterDigest([...ids, 'm-new']));
  });

  it('a beat that loses the claim on the walk to another beat leaves the walk to it', async () => {
    const h = await registered();
    h.store.loseCommit('heartbeat');
    expect(await receiveHeartbeat(h.ctx, ids)).toEqual({ stored: false, livenessChanges: 0 });
    expect(await liveness(h)).toEqual({ 'm-1': false, 'm-2': false, 'm-3': false });
  });

  it('two beats at once walk the roster once between them', async () => {
    const h = await registered();
    const results = await Promise.all([receiveHeartbeat(h.ctx, ids), receiveHeartbeat(h.ctx, ids)]);
    expect(results.reduce((sum, r) => sum + r.livenessChanges, 0)).toBe(3);
    expect(await liveness(h)).toEqual({ 'm-1': true, 'm-2': true, 'm-3': true });
  });
});
