import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSite, testConfig, type TestSite } from '#test/support/local-site.ts';

// Many reservations at once, small and large, by count and by NVLink domain, racing each other and tenants' creates
// on a small fleet: no machine ever ends up in two reservations or with another org's instance, and each reservation
// holds all it asked for or nothing.
const config = `
[instance_create_retry]
base_delay_ms = 10
[simulator]
machines = [ { type = "gb200", count = 64, racks = 4, nvlink_domain_size = 4 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 10
cleanup_ms = 10
[api.routes."POST /v2/org/{org}/nico/instance"]
rate_limit = 100
`;

interface Answer {
  status: number;
  body: any;
}
interface Machine {
  id: string;
  nvlinkDomain: string;
  instanceId?: string;
  reservation?: { id: string; org: string };
}

let site: TestSite;
let admin: string;
const orgs = ['acme', 'globex', 'initech', 'umbrella'];

beforeAll(async () => {
  site = await startTestSite({ config: testConfig(config) });
  admin = await site.token('provider', ['provider-admin']);
  await site.eventually(async () => (await site.call('GET', '/admin/machines?allocatable=true&limit=500', { token: admin })).body.items.length === 64, 30_000);
  await site.eventually(async () => (await site.call('GET', '/admin/fleet/summary', { token: admin })).body.byType?.gb200?.machines === 64);
}, 90_000);
afterAll(async () => site?.stop());

describe('reservations under contention', () => {
  it('concurrent reservations and creates never share a machine, and each reservation is all or nothing', async () => {
    const tokens = Object.fromEntries(await Promise.all(orgs.map(async (org) => [org, await site.token(org, ['tenant'])] as const)));
    const asks = [
      ...Array.from({ length: 16 }, (_, i) => ({ org: orgs[i % 4]!, machineType: 'gb200', count: 3 })),
      ...Array.from({ length: 8 }, (_, i) => ({
        org: orgs[i % 4]!,
        machineType: 'gb200',
        nvlinkDomains: [`gb200-nvl${(i % 6) + 1}`, `gb200-nvl${(i % 6) + 2}`],
      })),
      { org: 'acme', machineType: 'gb200', count: 50 },
      { org: 'globex', machineType: 'gb200', count: 52 },
    ];
    const reserving = asks.map((body) => site.call('POST', '/admin/reservations', { token: admin, body }) as Promise<Answer>);
    const creating = Array.from(
      { length: 24 },
      (_, i) => site.call('POST', `/v2/org/${orgs[i % 4]}/nico/instance`, { token: tokens[orgs[i % 4]!]!, body: { machineType: 'gb200' } }) as Promise<Answer>,
    );
    const [reserved, created] = await Promise.all([Promise.all(reserving), Promise.all(creating)]);

    for (const answer of [...reserved, ...created]) expect([201, 202, 409], JSON.stringify(answer.body)).toContain(answer.status);
    for (const refused of reserved.filter((a) => a.status === 409)) expect(['insufficient-capacity', 'concurrent-update']).toContain(refused.body.code);
    const recorded = reserved.filter((a) => a.status !== 409).map((a) => a.body.id as string);
    // A refusal recorded nothing: the listing holds exactly the reservations answered 201 or 202.
    const listed = (await site.call('GET', '/admin/reservations?limit=500', { token: admin })).body.items as Array<{ id: string }>;
    expect(listed.map((r) => r.id).sort()).toEqual([...recorded].sort());

    // The large ones finish in the background: Active or Failed.
    const final = await site.eventually(async () => {
      const shown = await Promise.all(recorded.map(async (id) => (await site.call('GET', `/admin/reservations/${id}`, { token: admin })).body));
      return shown.every((r) => r.state === 'Active' || r.state === 'Failed') ? shown : undefined;
    }, 60_000);

    const fleet = (await site.call('GET', '/admin/machines?limit=500', { token: admin })).body.items as Machine[];
    const byId = new Map(fleet.map((m) => [m.id, m]));
    const held = final.filter((r) => r.state === 'Active').flatMap((r) => r.machineIds as string[]);
    expect(new Set(held).size).toBe(held.length);
    for (const r of final) {
      const ask = asks[reserved.findIndex((a) => a.body.id === r.id)]!;
      if (r.state === 'Failed') {
        expect(r.machineIds).toEqual([]);
        expect(r.free).toBeLessThan(r.wanted);
        continue;
      }
      // All it asked for: the count, or every machine of each domain; each machine carries it.
      if ('count' in ask) expect(r.machineIds).toHaveLength(ask.count);
      else expect(new Set(r.machineIds.map((id: string) => byId.get(id)!.nvlinkDomain))).toEqual(new Set(ask.nvlinkDomains));
      if ('nvlinkDomains' in ask) expect(r.machineIds).toHaveLength(4 * ask.nvlinkDomains.length);
      for (const id of r.machineIds) expect(byId.get(id)!.reservation).toEqual({ id: r.id, org: r.org });
    }
    // Machines carry only Active reservations, and no machine holds one org's instance under another's reservation.
    const active = new Set(final.filter((r) => r.state === 'Active').map((r) => r.id));
    for (const m of fleet) if (m.reservation) expect(active.has(m.reservation.id), m.id).toBe(true);
    const instances = created.filter((a) => a.status === 201).map((a) => a.body as { org: string; machineId: string });
    expect(new Set(instances.map((i) => i.machineId)).size).toBe(instances.length);
    for (const instance of instances) {
      const reservation = byId.get(instance.machineId)!.reservation;
      if (reservation) expect(reservation.org).toBe(instance.org);
    }
  }, 120_000);
});
