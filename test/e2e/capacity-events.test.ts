import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Machine } from '#domain/core/model.ts';
import { deliveredOf, readySite, type Actors } from '#test/support/repair-steps.ts';
import { cliFor, shown } from '#test/support/cli.ts';
import { expectProblem, testConfig, type TestSite } from '#test/support/local-site.ts';

// The capacity-events feed (GET .../capacity-events) through the whole local runner, its table stream duplicating,
// reordering and delaying records on purpose (with the run's own chaos and seed when the run has one, so that a
// failing seed replays): a follower polling the cursor all along sees every entry once, in order, and the bus
// carries each as its event.

interface Entry {
  id: string;
  at: string;
  machineId: string;
  machineType: string;
  change: 'delivered' | 'withdrawn';
  reason: string;
}

const issue = { category: 'HARDWARE', summary: 'ECC errors' };

describe('capacity events', () => {
  let site: TestSite;
  let who: Actors;
  beforeAll(async () => {
    ({ site, who } = await readySite(8, {
      config: testConfig(`
[instance_create_retry]
base_delay_ms = 10
timeout_ms = 2000
[maintenance]
emergency_min_hand_back_minutes = 0
[simulator]
machines = [ { type = "gb200", count = 4, racks = 2 }, { type = "h100", count = 4, racks = 2 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 20
cleanup_ms = 20
maintenance_ms = 50
validation_ms = 50
`),
      streamChaos: inject('streamChaos') ?? { modes: ['duplicate', 'reorder', 'delay'], seed: 43 },
    }));
  }, 90_000);
  afterAll(async () => site?.stop());

  const feed = async (org: string, since: string, token = who.tenant) =>
    site.call('GET', `/v2/org/${org}/nico/capacity-events?since=${since}&limit=3`, { token });

  /** Polls the org's feed from the start until stopped, a page of 3 at a time, as a tenant's consumer would. */
  function follower(org: string) {
    const seen: Entry[] = [];
    const refused: unknown[] = [];
    let cursor = '0';
    let stopped = false;
    const running = (async () => {
      while (!stopped) {
        const page = await feed(org, cursor);
        if (page.status !== 200) refused.push(page.body);
        else {
          seen.push(...page.body.items);
          cursor = page.body.cursor;
        }
        if (page.status !== 200 || page.body.items.length === 0) await new Promise((r) => setTimeout(r, 100));
      }
    })();
    return {
      seen,
      stop: async () => {
        stopped = true;
        await running;
        expect(refused).toEqual([]);
        return { seen, cursor };
      },
    };
  }

  /** What the reservations feature does to a machine: sets or clears `reservation`, in one guarded commit. */
  async function reserve(machineId: string, reservation: Machine['reservation'] | null) {
    const before = (await site.ctx.store.getMachine(machineId))!;
    const { reservation: _previous, ...rest } = before;
    await site.ctx.store.commit({ machines: [{ before, after: reservation ? { ...rest, reservation } : rest }], history: [] });
  }

  const entriesOf = (seen: Entry[], machineId: string) => seen.filter((e) => e.machineId === machineId).map((e) => [e.change, e.reason]);
  /** Until the follower has seen `count` entries of the machine: the stream's chaos (and AWS's throttles, when on) may take a while. */
  const until = (seen: Entry[], machineId: string, count: number) => site.eventually(async () => entriesOf(seen, machineId).length >= count, 60_000);

  /** The instance once it has this status; generous, as the stream's chaos delays what leads there. */
  const instanceStatus = (id: string, status: string) =>
    site.eventually(async () => {
      const { body } = await site.call('GET', `/v2/org/acme/nico/instance/${id}`, { token: who.tenant });
      return body.status === status ? body : undefined;
    }, 30_000);

  async function runH100() {
    const created = await site.call('POST', '/v2/org/acme/nico/instance', { token: who.tenant, body: { machineType: 'h100' } });
    expect(created.status).toBe(201);
    return instanceStatus(created.body.id, 'Ready');
  }

  it("tells the org its reserved machine's arrival, repair, maintenance, retirement and release, and its own machine taken for repair", async () => {
    const acme = follower('acme');
    const gb200 = (await site.call('GET', '/admin/machines?limit=100', { token: who.admin })).body.items
      .filter((m: { machineType: string }) => m.machineType === 'gb200')
      .map((m: { id: string }) => m.id)
      .sort();
    const [reserved, retired] = gb200 as [string, string];

    // The org's machine released with an issue goes to repair: withdrawn. Its own create and release: no entry.
    const reported = await runH100();
    const released = await site.call('DELETE', `/v2/org/acme/nico/instance/${reported.id}`, { token: who.tenant, body: { machineHealthIssue: issue } });
    expect(released.status).toBe(202);
    await until(acme.seen, reported.machineId, 1);
    const plain = await runH100();
    expect((await site.call('DELETE', `/v2/org/acme/nico/instance/${plain.id}`, { token: who.tenant })).status).toBe(202);
    await instanceStatus(plain.id, 'Terminated');

    await reserve(reserved, { id: 'rsv-1', org: 'acme' });
    await reserve(retired, { id: 'rsv-1', org: 'acme' });
    await until(acme.seen, reserved, 1);
    await until(acme.seen, retired, 1);

    const override = await site.call('POST', `/admin/machines/${reserved}/health-overrides`, { token: who.admin, body: { template: 'request-repair' } });
    expect(override.status, JSON.stringify(override.body)).toBe(201);
    await until(acme.seen, reserved, 2);
    expect((await site.call('DELETE', `/admin/machines/${reserved}/health-overrides/repair-request`, { token: who.admin })).status).toBe(204);
    await until(acme.seen, reserved, 3);

    const maintenance = await site.call('POST', '/admin/maintenance', {
      token: who.admin,
      body: {
        kind: 'emergency',
        category: 'hardware',
        reason: 'replace a PSU',
        scope: { machineIds: [reserved] },
        handBackBy: new Date(Date.now() + 1_000).toISOString(),
        windowMinutes: 60,
      },
    });
    expect(maintenance.status, JSON.stringify(maintenance.body)).toBe(201);
    await until(acme.seen, reserved, 5);

    expect((await site.call('POST', `/admin/machines/${retired}/retire`, { token: who.admin, body: { reason: 'end of life' } })).status).toBe(200);
    await until(acme.seen, retired, 2);
    await reserve(reserved, null);
    await until(acme.seen, reserved, 6);

    await site.streamIdle();
    const { seen, cursor } = await acme.stop();
    expect(entriesOf(seen, plain.machineId)).toEqual([]);
    expect(entriesOf(seen, reported.machineId)).toEqual([['withdrawn', 'repair']]);
    expect(entriesOf(seen, reserved)).toEqual([
      ['delivered', 'reservation'],
      ['withdrawn', 'repair'],
      ['delivered', 'repair-return'],
      ['withdrawn', 'maintenance'],
      ['delivered', 'maintenance-return'],
      ['withdrawn', 'reservation-released'],
    ]);
    expect(entriesOf(seen, retired)).toEqual([
      ['delivered', 'reservation'],
      ['withdrawn', 'retired'],
    ]);

    // The follower saw every entry once, in the feed's order: what a fresh read from the start gives.
    const fresh: Entry[] = [];
    for (let since = '0'; ; ) {
      const page = (await feed('acme', since)).body;
      if (page.items.length === 0) break;
      fresh.push(...page.items);
      since = page.cursor;
    }
    expect(seen).toEqual(fresh);
    expect(new Set(seen.map((e) => e.id)).size).toBe(seen.length);
    expect(cursor).toBe(String(seen.length));

    // The bus carried each entry as its event, naming it.
    await site.eventually(async () => deliveredOf(site, 'CapacityDelivered').length + deliveredOf(site, 'CapacityWithdrawn').length >= seen.length);
    const events = [...deliveredOf(site, 'CapacityDelivered'), ...deliveredOf(site, 'CapacityWithdrawn')];
    expect(events.map((e) => e.detail.entryId).sort()).toEqual(seen.map((e) => e.id).sort());
    for (const event of events) {
      const entry = seen.find((e) => e.id === event.detail.entryId)!;
      expect(event).toMatchObject({
        type: entry.change === 'delivered' ? 'CapacityDelivered' : 'CapacityWithdrawn',
        detail: { org: 'acme', machineId: entry.machineId, reason: entry.reason },
      });
    }

    // Another org's feed holds none of it; a cursor the feed never gave is refused.
    const globex = await site.token('globex', ['tenant']);
    expect((await feed('globex', '0', globex)).body).toEqual({ items: [], cursor: '0' });
    expectProblem(await feed('globex', cursor, globex), 422, 'invalid-cursor');
    expectProblem(await feed('acme', cursor, globex), 404);
  }, 180_000);

  it('fleetward capacity events prints the feed, goes on from --since, and --follow prints new entries until Ctrl-C', async () => {
    const cli = cliFor(site.url, who.tenant);
    const args = ['capacity', 'events', '-f', 'json'];
    const all = await cli(args);
    expect(all.code, shown(args, all)).toBe(0);
    const lines = (text: string) =>
      text
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Entry);
    const printed = lines(all.stdout);
    expect(printed.length).toBeGreaterThan(0);
    const cursor = all.stderr.match(/cursor: (\d+)/)?.[1];
    expect(cursor).toBe(String(printed.length));
    const none = await cli([...args, '--since', cursor!]);
    expect(none.stdout).toBe('');
    expect(none.stderr).toContain(`cursor: ${cursor}`);

    const follow = cli.start([...args, '--since', cursor!, '--follow', '--interval', '0.2']);
    let stdout = '';
    let stderr = '';
    follow.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    follow.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => follow.on('close', resolve));
    const spare = printed.find((e) => e.reason === 'reservation-released')!.machineId;
    try {
      await reserve(spare, { id: 'rsv-2', org: 'acme' });
      await site.eventually(async () => lines(stdout).length >= 1, 30_000);
      expect(lines(stdout).map((e) => [e.machineId, e.change, e.reason])).toEqual([[spare, 'delivered', 'reservation']]);
    } finally {
      follow.kill('SIGINT');
    }
    expect(await exited, `stderr: ${stderr}`).toBe(0);
    expect(stderr).toContain(`cursor: ${Number(cursor) + 1}`);
  }, 60_000);
});
