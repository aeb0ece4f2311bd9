import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig, type TestSite } from '#test/support/local-site.ts';
import { instanceStatus, readySite, type Actors } from '#test/support/repair-steps.ts';

// Quotas per org and machine type, exact under concurrency: the usage counter moves in the transaction that moves
// an instance into or out of a counted status, guarded by the quota the create was decided against.
const config = `
[instance_create_retry]
base_delay_ms = 10
[simulator]
machines = [ { type = "gb200", count = 30, racks = 3 }, { type = "h100", count = 4, racks = 1 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 10
cleanup_ms = 10
[api.routes."POST /v2/org/{org}/nico/instance"]
rate_limit = 100
`;

let site: TestSite;
let who: Actors;
const instances = '/v2/org/acme/nico/instance';

beforeAll(async () => {
  ({ site, who } = await readySite(34, { config: testConfig(config) }));
});
afterAll(async () => site?.stop());

const usage = async () => (await site.call('GET', '/admin/tenants/acme', { token: who.admin })).body.usage;

describe('quotas', () => {
  it('are set by the provider, audited, and refused when malformed with nothing changed', async () => {
    for (const body of [{}, { quotas: { gb200: -1 } }, { quotas: { GB200: 1 } }, { quotas: { gb200: 1.5 } }]) {
      const answer = await site.call('PUT', '/admin/tenants/acme', { token: who.admin, body });
      expect(answer.status, JSON.stringify(body)).toBe(422);
    }
    const set = await site.call('PUT', '/admin/tenants/acme', { token: who.admin, body: { quotas: { gb200: 10, h100: 0 } } });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ org: 'acme', quotas: { gb200: 10, h100: 0 }, capabilities: { targetedInstanceCreation: false } });
    const audit = await site.call('GET', '/admin/audit?target=tenants/acme', { token: who.admin });
    expect(audit.body.items[0]).toMatchObject({ action: 'tenant-quotas-set', target: 'tenants/acme', after: { gb200: 10, h100: 0 } });
    const h100 = await site.call('POST', instances, { token: who.tenant, body: { machineType: 'h100' } });
    expect(h100.status).toBe(409);
    expect(h100.body).toMatchObject({ code: 'quota-exceeded', machineType: 'h100', quota: 0, used: 0 });
  });

  it('50 concurrent creates against a quota of 10: exactly 10 win, every other answer is 409 quota-exceeded', async () => {
    const answers = await Promise.all(Array.from({ length: 50 }, () => site.call('POST', instances, { token: who.tenant, body: { machineType: 'gb200' } })));
    const won = answers.filter((a) => a.status === 201);
    expect(won).toHaveLength(10);
    const refused = answers.filter((a) => a.status !== 201).map((a) => [a.status, a.body.code, a.body.machineType, a.body.quota, a.body.used, a.body.detail]);
    expect(refused).toEqual(Array(40).fill([409, 'quota-exceeded', 'gb200', 10, 10, 'org acme holds 10 of its quota of 10 gb200 machine(s)']));
    expect(new Set(won.map((a) => a.body.machineId)).size).toBe(10);
    expect(await usage()).toMatchObject({ gb200: 10 });
    // Another org has no quota: it is not held back by acme's.
    const globex = await site.token('globex', ['tenant']);
    expect((await site.call('POST', '/v2/org/globex/nico/instance', { token: globex, body: { machineType: 'gb200' } })).status).toBe(201);
  });

  it('a meta-instance larger than the quota is 422; one the org has no room for is 409; a released instance frees its place', async () => {
    const meta = '/v2/org/acme/nico/meta-instance';
    const tooLarge = await site.call('POST', meta, { token: who.tenant, body: { machineType: 'gb200', minNodes: 11 } });
    expect(tooLarge.status).toBe(422);
    expect(tooLarge.body.code).toBe('unsatisfiable');
    const noRoom = await site.call('POST', meta, { token: who.tenant, body: { machineType: 'gb200', minNodes: 2 } });
    expect(noRoom.status).toBe(409);
    expect(noRoom.body).toMatchObject({ code: 'quota-exceeded', quota: 10, used: 10 });
    expect((await site.call('GET', meta, { token: who.tenant })).body.items).toEqual([]);

    const ready = await site.eventually(async () => {
      const items = (await site.call('GET', `${instances}?status=Ready`, { token: who.tenant })).body.items;
      return items.length === 10 ? items : undefined;
    });
    const [first, second] = ready;
    for (const instance of [first, second]) expect((await site.call('DELETE', `${instances}/${instance.id}`, { token: who.tenant })).status).toBe(202);
    // Terminating still counts; once both are Terminated the org has room for two again.
    for (const instance of [first, second]) await instanceStatus(site, who.tenant, 'acme', instance.id, 'Terminated');
    expect(await usage()).toMatchObject({ gb200: 8 });
    const placed = await site.call('POST', meta, { token: who.tenant, body: { machineType: 'gb200', minNodes: 2 } });
    expect(placed.status).toBe(201);
    expect(placed.body.status).toBe('Ready');
    expect(await usage()).toMatchObject({ gb200: 10 });
  });
});
