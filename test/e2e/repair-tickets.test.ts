import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, testConfig, type TestSite } from '#test/support/local-site.ts';
import { claimForRepair, readySite, repairRelease, reportIssue, setRepairStatus, type Actors } from '#test/support/repair-steps.ts';

// The org's repair tickets (docs/api.md "Repair tickets") on a local site: each report a tenant made, told from its
// machine's history through repair and validation, newest first, paged, and no other org's.

const config = testConfig(`
[instance_create_retry]
base_delay_ms = 10
timeout_ms = 2000
[simulator]
machines = [ { type = "gb200", count = 4, racks = 1 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 20
cleanup_ms = 20
validation_ms = 50
[repair_storm]
max_fraction = 1
`);

let site: TestSite;
let who: Actors;
beforeAll(async () => {
  ({ site, who } = await readySite(4, { config }));
});
afterAll(async () => site?.stop());

const tickets = async (token: string, org = 'acme', query = '') => site.call('GET', `/v2/org/${org}/nico/repair-tickets${query}`, { token });
const ticketOfMachine = async (machineId: string) =>
  ((await tickets(who.tenant)).body.items as Array<Record<string, unknown>>).find((t) => t.machineId === machineId);

describe('repair tickets', () => {
  it('follow a report from open through repair to resolved by validation, with its dates', async () => {
    const machineId = await reportIssue(site, who, { category: 'hardware', summary: 'Xid 79', details: 'GPU 3' });
    const open = await ticketOfMachine(machineId);
    expect(open).toMatchObject({ machineId, category: 'HARDWARE', summary: 'Xid 79', state: 'open' });
    expect(open!.closedAt).toBeUndefined();
    expect(open!.updatedAt).toBe(open!.openedAt);

    const repairInstance = await claimForRepair(site, who, machineId);
    expect(await ticketOfMachine(machineId)).toMatchObject({ state: 'in-repair' });
    await setRepairStatus(site, who, machineId, 'Completed');
    await repairRelease(site, who, repairInstance, machineId);
    const resolved = await site.eventually(async () => {
      const ticket = await ticketOfMachine(machineId);
      return ticket?.state === 'resolved' ? ticket : undefined;
    });
    expect(resolved).toMatchObject({ id: open!.id, action: 'validated', openedAt: open!.openedAt });
    expect(resolved.closedAt).toBe(resolved.updatedAt);
    expect(String(resolved.closedAt) > String(resolved.openedAt)).toBe(true);
  });

  it('come newest first, a page at a time, and only the org sees its own', async () => {
    await reportIssue(site, who, { category: 'network', summary: 'link flaps' });
    const all = (await tickets(who.tenant)).body.items as Array<{ openedAt: string; summary: string }>;
    expect(all.length).toBeGreaterThanOrEqual(2);
    expect(all[0]!.summary).toBe('link flaps');
    expect(all.map((t) => t.openedAt)).toEqual([...all.map((t) => t.openedAt)].sort().reverse());
    const first = await tickets(who.tenant, 'acme', '?limit=1');
    expect(first.body.items).toHaveLength(1);
    expect(first.body.nextToken).toBeDefined();
    const second = await tickets(who.tenant, 'acme', `?limit=1&nextToken=${encodeURIComponent(first.body.nextToken)}`);
    expect(second.body.items[0].summary).toBe(all[1]!.summary);

    const other = await site.token('globex', ['tenant']);
    expect((await tickets(other, 'globex')).body.items).toEqual([]);
    expectProblem(await tickets(other, 'acme'), 404);
    expectProblem(await tickets(who.tenant, 'acme', '?limit=51'), 422);
  });
});
