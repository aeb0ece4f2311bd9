import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig, type TestSite } from '#test/support/local-site.ts';
import { machine, readySite, type Actors } from '#test/support/repair-steps.ts';

// 12 gb200 in two racks of 6, in NVLink domains of 4 numbered within the type: gb200-nvl2 spans both racks. The
// simulator's registration carries each machine's domain; placement in one domain reads the domain index.
const config = `
[instance_create_retry]
base_delay_ms = 10
[simulator]
machines = [ { type = "gb200", count = 12, racks = 2, nvlink_domain_size = 4 }, { type = "h100", count = 2, racks = 1 } ]
heartbeat_interval_seconds = 0.1
provision_ms = 10
cleanup_ms = 10
`;

let site: TestSite;
let who: Actors;
const base = '/v2/org/acme/nico/meta-instance';

beforeAll(async () => {
  ({ site, who } = await readySite(14, { config: testConfig(config) }));
});
afterAll(async () => site?.stop());

const domainsOf = async (instanceIds: string[]) =>
  Promise.all(
    instanceIds.map(async (id) => {
      const instance = (await site.call('GET', `/v2/org/acme/nico/instance/${id}`, { token: who.tenant })).body;
      return (await machine(site, who.admin, instance.machineId)).nvlinkDomain as string;
    }),
  );

describe('NVLink domains', () => {
  it('come with registration: the machine shows its domain, the summary counts per domain when asked, each rack per domain', async () => {
    expect(await machine(site, who.admin, 'gb200-r1-01')).toMatchObject({ rack: 'rack-1', nvlinkDomain: 'gb200-nvl1' });
    expect(await machine(site, who.admin, 'gb200-r1-05')).toMatchObject({ rack: 'rack-1', nvlinkDomain: 'gb200-nvl2' });
    expect(await machine(site, who.admin, 'gb200-r2-01')).toMatchObject({ rack: 'rack-2', nvlinkDomain: 'gb200-nvl2' });
    expect((await machine(site, who.admin, 'h100-r3-01')).nvlinkDomain).toBeUndefined();
    const summary = await site.eventually(async () => {
      const { body } = await site.call('GET', '/admin/fleet/summary?include=nvlinkDomains', { token: who.admin });
      return body.byType?.gb200?.allocatable === 12 ? body : undefined;
    });
    const each = { machines: 4, allocatable: 4, quarantined: 0 };
    expect(summary.byType.gb200.byNvlinkDomain).toEqual({ 'gb200-nvl1': each, 'gb200-nvl2': each, 'gb200-nvl3': each });
    expect(summary.byType.h100.byNvlinkDomain).toBeUndefined();
    expect((await site.call('GET', '/admin/fleet/summary', { token: who.admin })).body.byType.gb200).toEqual({ machines: 12, allocatable: 12 });
    const listed = await site.call('GET', '/admin/fleet/racks?machineType=gb200', { token: who.admin });
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    const racks = listed.body.items;
    const rack1 = racks.find((r: { rack: string }) => r.rack === 'rack-1');
    expect(rack1.tally).toEqual({ machines: 6, allocatable: 6, quarantined: 0 });
    expect(rack1.byNvlinkDomain).toEqual({ 'gb200-nvl1': each, 'gb200-nvl2': { machines: 2, allocatable: 2, quarantined: 0 } });
    const bad = await site.call('GET', '/admin/fleet/summary?include=racks', { token: who.admin });
    expect([bad.status, bad.body.code]).toEqual([422, 'validation-failed']);
  });

  it('refuses a group larger than any domain, or on a type without domains, with 422 unsatisfiable', async () => {
    for (const body of [
      { machineType: 'gb200', minNodes: 5, placement: { sameNvlinkDomain: true } },
      { machineType: 'h100', minNodes: 1, placement: { sameNvlinkDomain: true } },
      { machineType: 'gb200', minNodes: 2, machineIds: ['gb200-r1-01', 'gb200-r2-06'], placement: { sameNvlinkDomain: true } },
    ]) {
      const answer = await site.call('POST', base, { token: who.tenant, body });
      expect(answer.status, JSON.stringify(body)).toBe(422);
      expect(answer.body.code).toBe('unsatisfiable');
    }
  });

  it('places every member in one domain, also one that spans racks, and finds the domain with room', async () => {
    // A single instance in each of nvl1 and nvl3 leaves nvl2 (across both racks) the only domain with 4 free.
    const pinned = [];
    for (const machineIds of [['gb200-r1-01'], ['gb200-r2-06']]) {
      const created = await site.call('POST', base, { token: who.tenant, body: { machineType: 'gb200', minNodes: 1, machineIds } });
      expect(created.status).toBe(201);
      pinned.push(created.body.id);
    }
    const group = await site.call('POST', base, { token: who.tenant, body: { machineType: 'gb200', minNodes: 4, placement: { sameNvlinkDomain: true } } });
    expect(group.status).toBe(201);
    expect(group.body).toMatchObject({ status: 'Ready', placement: { sameRack: false, sameNvlinkDomain: true } });
    expect(await domainsOf(group.body.instanceIds)).toEqual(Array(4).fill('gb200-nvl2'));

    // No domain has 4 free now: the next group waits and says why.
    const waiting = await site.call('POST', base, { token: who.tenant, body: { machineType: 'gb200', minNodes: 4, placement: { sameNvlinkDomain: true } } });
    expect(waiting.status).toBe(201);
    expect(waiting.body.status).toBe('Placing');
    expect(waiting.body.placementError).toMatch(/no NVLink domain has 4 free gb200 machine\(s\) together \(best: 3\)/);

    // Freeing nvl1's pinned machine lets the waiting group into nvl1 whole.
    expect((await site.call('DELETE', `${base}/${pinned[0]}`, { token: who.tenant })).status).toBe(202);
    const placed = await site.eventually(async () => {
      const { body } = await site.call('GET', `${base}/${waiting.body.id}`, { token: who.tenant });
      return body.status === 'Ready' ? body : undefined;
    }, 15_000);
    expect(await domainsOf(placed.instanceIds)).toEqual(Array(4).fill('gb200-nvl1'));
  });
});
