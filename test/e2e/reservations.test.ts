import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, testConfig, type TestSite } from '#test/support/local-site.ts';
import {
  claimForRepair,
  instanceStatus,
  machine,
  readySite,
  repairRelease,
  reportIssue,
  setRepairStatus,
  validated,
  type Actors,
} from '#test/support/repair-steps.ts';

// Reservations on a site of 80 gb200 in 4 racks, in NVLink domains of 4: small ones decided in the request, large ones
// claimed in chunks by the reconciler; reserved machines go to their org alone, and come back to it after a repair.
const config = `
[instance_create_retry]
base_delay_ms = 10
[repair_storm]
max_quarantines = 1000
max_fraction = 1
[simulator]
machines = [ { type = "gb200", count = 80, racks = 4, nvlink_domain_size = 4 }, { type = "h100", count = 4, racks = 1 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 10
cleanup_ms = 10
maintenance_ms = 50
`;

let site: TestSite;
let who: Actors;
let globex: string;
const admin = '/admin/reservations';

beforeAll(async () => {
  ({ site, who } = await readySite(1, { config: testConfig(config) }));
  await site.eventually(
    async () => (await site.call('GET', '/admin/machines?allocatable=true&limit=500', { token: who.admin })).body.items.length === 84,
    30_000,
  );
  // The fleet summary counts the NVLink domains a reservation of whole domains is sized by.
  await site.eventually(async () => (await site.call('GET', '/admin/fleet/summary', { token: who.admin })).body.byType?.gb200?.machines === 80);
  globex = await site.token('globex', ['tenant']);
}, 90_000);
afterAll(async () => site?.stop());

const reserve = (body: Record<string, unknown>) => site.call('POST', admin, { token: who.admin, body });
const show = async (id: string) => (await site.call('GET', `${admin}/${id}`, { token: who.admin })).body;
const settled = (id: string, state: string) => site.eventually(async () => ((await show(id)).state === state ? show(id) : undefined), 30_000);
const reservationOn = async (id: string) => (await machine(site, who.admin, id)).reservation;

describe('reservations', () => {
  it('a small one is decided in the request: 201 Active, each machine carrying it, audited', async () => {
    const created = await reserve({ org: 'acme', machineType: 'gb200', count: 3, name: 'small' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ org: 'acme', machineType: 'gb200', name: 'small', state: 'Active' });
    expect(created.body.machineIds).toHaveLength(3);
    for (const id of created.body.machineIds) expect(await reservationOn(id)).toEqual({ id: created.body.id, org: 'acme' });
    // The audit log is a list: it may show the entry a moment after the write (docs/api.md).
    const entry = await site.eventually(
      async () => (await site.call('GET', `/admin/audit?target=reservations/${created.body.id}`, { token: who.admin })).body.items[0],
    );
    expect(entry).toMatchObject({ action: 'reservation-created', after: { org: 'acme', state: 'Active' } });
    const health = await site.eventually(async () => ((await show(created.body.id)).health.machines === 3 ? (await show(created.body.id)).health : undefined));
    expect(health).toEqual({ machines: 3, healthy: 3, inUse: 0, quarantined: 0 });
    // The org's governance view counts them reserved (and delivered), not in use.
    const capacity = (await site.call('GET', '/v2/org/acme/nico/capacity', { token: who.tenant })).body.byType.gb200;
    expect(capacity).toMatchObject({ delivered: { machines: 3 }, reserved: { machines: 3 }, inUse: { machines: 0 } });
  });

  it('is all or nothing: more than is free is 409 insufficient-capacity with wanted and free, and nothing changes', async () => {
    const before = (await site.call('GET', `${admin}?limit=500`, { token: who.admin })).body.items.length;
    const refused = await reserve({ org: 'acme', machineType: 'h100', count: 5 });
    expectProblem(refused, 409, 'insufficient-capacity');
    expect(refused.body).toMatchObject({ wanted: 5, free: 4 });
    const named = await reserve({ org: 'acme', machineType: 'h100', machineIds: ['h100-r5-01', 'no-such-machine'] });
    expectProblem(named, 409, 'insufficient-capacity');
    expect((await site.call('GET', `${admin}?limit=500`, { token: who.admin })).body.items).toHaveLength(before);
    expect(await reservationOn('h100-r5-01')).toBeUndefined();
    for (const body of [
      { org: 'acme', machineType: 'gb200' },
      { org: 'acme', machineType: 'gb200', count: 1, machineIds: ['x'] },
      { org: 'acme', count: 1 },
    ]) {
      expectProblem(await reserve(body), 422);
    }
    expectProblem(await reserve({ org: 'acme', machineType: 'a100', count: 1 }), 422, 'unknown-machine-type');
    expectProblem(await reserve({ org: 'acme', machineType: 'gb200', nvlinkDomains: ['nowhere'] }), 422, 'unknown-nvlink-domain');
  });

  it('whole NVLink domains are taken as a unit', async () => {
    const created = await reserve({ org: 'acme', machineType: 'gb200', nvlinkDomains: ['gb200-nvl20'] });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ state: 'Active', nvlinkDomains: ['gb200-nvl20'] });
    const domains = await Promise.all(created.body.machineIds.map(async (id: string) => (await machine(site, who.admin, id)).nvlinkDomain));
    expect(domains).toEqual(['gb200-nvl20', 'gb200-nvl20', 'gb200-nvl20', 'gb200-nvl20']);
    // A domain already reserved is not wholly free.
    const again = await reserve({ org: 'globex', machineType: 'gb200', nvlinkDomains: ['gb200-nvl20'] });
    expectProblem(again, 409, 'insufficient-capacity');
    expect(again.body).toMatchObject({ wanted: 4, free: 0 });
  });

  it("reserved machines go to their org first and never to another org's creates", async () => {
    const h100 = await reserve({ org: 'acme', machineType: 'h100', machineIds: ['h100-r5-01', 'h100-r5-02'] });
    expect(h100.status).toBe(201);
    const theirs = await Promise.all(
      Array.from({ length: 4 }, () => site.call('POST', '/v2/org/globex/nico/instance', { token: globex, body: { machineType: 'h100' } })),
    );
    expect(theirs.map((a) => a.status).sort()).toEqual([201, 201, 409, 409]);
    expect(
      theirs
        .filter((a) => a.status === 201)
        .map((a) => a.body.machineId)
        .sort(),
    ).toEqual(['h100-r5-03', 'h100-r5-04']);
    expect(theirs.find((a) => a.status === 409)!.body.code).toBe('no-capacity');
    const mine = await site.call('POST', '/v2/org/acme/nico/instance', { token: who.tenant, body: { machineType: 'h100' } });
    expect(mine.status).toBe(201);
    expect(['h100-r5-01', 'h100-r5-02']).toContain(mine.body.machineId);
    await instanceStatus(site, who.tenant, 'acme', mine.body.id, 'Ready');
    // Each reserved machine is counted on its own stream record: the one in use may be counted before the other.
    const health = await site.eventually(async () => {
      const now = (await show(h100.body.id)).health;
      return now.machines === 2 && now.inUse === 1 ? now : undefined;
    });
    expect(health.quarantined).toBe(0);

    // Released: a machine holding acme's instance keeps it, and joins the shared pool once the instance is gone.
    const released = await site.call('DELETE', `${admin}/${h100.body.id}`, { token: who.admin });
    expect(released.status).toBe(200);
    expect(released.body).toMatchObject({ state: 'Released', releasedAt: expect.any(String) });
    expect(await reservationOn(mine.body.machineId)).toBeUndefined();
    expect((await site.call('GET', `/v2/org/acme/nico/instance/${mine.body.id}`, { token: who.tenant })).body.status).toBe('Ready');
    const free = mine.body.machineId === 'h100-r5-01' ? 'h100-r5-02' : 'h100-r5-01';
    // The freed machine moves to the shared allocatable index, which may show it a moment late.
    await site.indexesCaughtUp();
    const now = await site.call('POST', '/v2/org/globex/nico/instance', { token: globex, body: { machineType: 'h100' } });
    expect(now.status).toBe(201);
    expect(now.body.machineId).toBe(free);
    expect((await site.call('DELETE', `${admin}/${h100.body.id}`, { token: who.admin })).body.state).toBe('Released');
  });

  it("an org's meta-instance takes its reserved machines first, quotas count them only once they hold an instance, other orgs never get them", async () => {
    const hooli = await site.token('hooli', ['tenant']);
    const created = await reserve({ org: 'hooli', machineType: 'gb200', count: 2 });
    expect(created.status).toBe(201);
    const usage = async () => (await site.call('GET', '/admin/tenants/hooli', { token: who.admin })).body.usage ?? {};
    expect((await usage()).gb200 ?? 0).toBe(0);
    // The reserved machines move to the org's own allocatable index, which may show them a moment late.
    await site.indexesCaughtUp();
    const meta = await site.call('POST', '/v2/org/hooli/nico/meta-instance', { token: hooli, body: { machineType: 'gb200', minNodes: 2 } });
    expect(meta.status, JSON.stringify(meta.body)).toBe(201);
    const members = await Promise.all(
      (meta.body.instanceIds as string[]).map(async (id) => (await site.call('GET', `/v2/org/hooli/nico/instance/${id}`, { token: hooli })).body.machineId),
    );
    expect(members.sort()).toEqual([...created.body.machineIds].sort());
    expect((await usage()).gb200).toBe(2);
    // Another org pinning one of them is told it is not available, and nothing is placed on it.
    const pinned = await site.call('POST', '/v2/org/globex/nico/meta-instance', { token: globex, body: { machineType: 'gb200', machineIds: [members[0]] } });
    expect(pinned.status, JSON.stringify(pinned.body)).toBe(201);
    expect(pinned.body.instanceIds).toEqual([]);
    expect(pinned.body.placementError).toContain('not available');
  });

  it('a large one answers 202 Pending and is claimed in chunks to Active; released, its machines return to the pool', async () => {
    const created = await reserve({ org: 'initech', machineType: 'gb200', count: 60 });
    expect(created.status).toBe(202);
    expect(created.body).toMatchObject({ state: 'Pending', wanted: 60 });
    const active = await settled(created.body.id, 'Active');
    expect(active.machineIds).toHaveLength(60);
    expect(new Set(active.machineIds).size).toBe(60);
    const holders = await Promise.all(active.machineIds.map(reservationOn));
    expect(holders.every((h: { id: string } | undefined) => h?.id === created.body.id)).toBe(true);

    expect((await site.call('DELETE', `${admin}/${created.body.id}`, { token: who.admin })).body.state).toBe('Released');
    await site.eventually(async () => (await Promise.all(active.machineIds.map(reservationOn))).every((h) => h === undefined), 30_000);
  });

  it('a large one that falls short ends Failed with wanted and free kept, and leaves nothing behind', async () => {
    const created = await reserve({ org: 'initech', machineType: 'gb200', count: 75 });
    expect(created.status).toBe(202);
    const failed = await settled(created.body.id, 'Failed');
    expect(failed).toMatchObject({ machineIds: [], wanted: 75 });
    expect(failed.free).toBeLessThan(75);
    const fleet = (await site.call('GET', '/admin/machines?limit=500', { token: who.admin })).body.items as Array<{ reservation?: { id: string } }>;
    expect(fleet.filter((m) => m.reservation?.id === created.body.id)).toEqual([]);
    expectProblem(await site.call('DELETE', `${admin}/${created.body.id}`, { token: who.admin }), 409, 'reservation-failed');
  });

  it('tenants see their own reservations only', async () => {
    const own = (await site.call('GET', '/v2/org/acme/nico/reservation', { token: who.tenant })).body.items as Array<{ org: string }>;
    expect(own.length).toBeGreaterThan(0);
    expect(own.every((r) => r.org === 'acme')).toBe(true);
    const theirs = (await site.call('GET', '/v2/org/globex/nico/reservation', { token: globex })).body.items as Array<{ org: string }>;
    expect(theirs.every((r) => r.org === 'globex')).toBe(true);
    expect((await site.call('GET', '/v2/org/acme/nico/reservation', { token: globex })).status).toBe(404);
    expect((await site.call('GET', admin, { token: who.tenant })).status).toBe(403);
  });

  it('a reserved machine that is reported, repaired and validated comes back to its reservation', async () => {
    // acme's creates take its reserved machines first: the reported machine is one of them.
    const machineId = await reportIssue(site, who);
    const held = await reservationOn(machineId);
    expect(held).toMatchObject({ org: 'acme' });
    const quarantined = await site.eventually(async () => ((await show(held.id)).health.quarantined === 1 ? (await show(held.id)).health : undefined));
    expect(quarantined.quarantined).toBe(1);
    const repairInstance = await claimForRepair(site, who, machineId);
    await setRepairStatus(site, who, machineId, 'Completed');
    const back = await repairRelease(site, who, repairInstance, machineId);
    expect(back).toMatchObject({ allocatable: true, reservation: held, validation: { reason: 'repair', state: 'passed' } });
    // Still acme's alone: in its pool, not the shared one.
    const listed = (await site.call('GET', `${admin}/${held.id}`, { token: who.admin })).body;
    expect(listed.machineIds).toContain(machineId);
    await site.eventually(async () => (await show(held.id)).health.quarantined === 0);
  });

  it('a reserved machine that is maintained, or validated on demand, comes back to its reservation', async () => {
    const created = await reserve({ org: 'umbrella', machineType: 'gb200', count: 1 });
    expect(created.status).toBe(201);
    const [machineId] = created.body.machineIds as string[];
    const held = { id: created.body.id, org: 'umbrella' };
    const body = {
      kind: 'planned',
      category: 'firmware',
      reason: 'reserved machines keep their reservation',
      scope: { machineIds: [machineId] },
      handBackBy: new Date(Date.now() + 15 * 86_400_000).toISOString(),
      windowMinutes: 60,
    };
    const declared = await site.call('POST', '/admin/maintenance', { token: who.admin, body });
    expect(declared.status, JSON.stringify(declared.body)).toBe(201);
    await site.eventually(async () => {
      const shown = (await site.call('GET', `/admin/maintenance/${declared.body.id}`, { token: who.admin })).body;
      return shown.machines[machineId!].phase === 'returned';
    }, 30_000);
    expect(await validated(site, who.admin, machineId!)).toMatchObject({ reservation: held, allocatable: true });

    expect((await site.call('POST', `/admin/machines/${machineId}/validation`, { token: who.admin })).status).toBe(202);
    const checked = await site.eventually(async () => {
      const m = await machine(site, who.admin, machineId!);
      return m.validation?.reason === 'provider' && m.validation.state !== 'running' ? m : undefined;
    });
    expect(checked).toMatchObject({ reservation: held, validation: { state: 'passed' }, allocatable: true });
  });
});
