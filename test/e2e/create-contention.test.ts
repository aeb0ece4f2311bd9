import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startTestSite, testConfig, type TestSite } from '#test/support/local-site.ts';
import { waitForFleet } from '#test/support/repair-steps.ts';
import { retryingClient } from '#test/support/retrying-client.ts';

// Bounded contention: far more creates than machines, all at once. Each create tries a few machines and then
// answers; the clients send again what docs/api.md says to retry; no machine is given twice, nothing fails with a
// 5xx, and the creates that find no machine left are told so. Once as the local
// site serves a burst (one process: its creates never race each other), once as Lambda does (every request a
// container of its own: they race, and the version guard decides).

const siteConfig = (machines: number) =>
  testConfig(`
[instance_create_retry]
base_delay_ms = 10
[simulator]
machines = [ { type = "gb200", count = ${machines}, racks = 5 } ]
heartbeat_interval_seconds = 5
provision_ms = 20
cleanup_ms = 20
[site_agent]
report_timeout_seconds = 90
[api.routes."POST /v2/org/{org}/nico/instance"]
rate_limit = 50
`);

const cases = [
  { name: 'one process serving the burst', machines: 100, requests: 400, containerPerRequest: false },
  { name: 'a container per request, as on Lambda', machines: 40, requests: 160, containerPerRequest: true },
];

for (const { name, machines, requests, containerPerRequest } of cases) {
  describe(`create contention, ${name}`, () => {
    let site: TestSite;
    let admin: string;
    beforeAll(async () => {
      site = await startTestSite({ config: siteConfig(machines), containerPerRequest });
      admin = await site.token('provider', ['provider-admin']);
      await waitForFleet(site, admin, machines);
    }, 120_000);
    afterAll(async () => site?.stop());

    const title = `${requests} concurrent creates on ${machines} machines: exactly ${machines} win, no machine twice`;
    it(`${title}; every other is told no-capacity, after retrying what docs/api.md says to retry`, async () => {
      const orgs = ['acme', 'globex', 'initech', 'umbrella'];
      const clients = await Promise.all(orgs.map(async (org) => retryingClient(site, await site.token(org, ['tenant']))));
      const responses = await Promise.all(
        Array.from({ length: requests }, (_, i) =>
          clients[i % orgs.length]!.call('POST', `/v2/org/${orgs[i % orgs.length]}/nico/instance`, { machineType: 'gb200', name: `rush-${i}` }),
        ),
      );

      const created = responses.filter((r) => r.status === 201);
      expect(created).toHaveLength(machines);
      expect(new Set(created.map((r) => r.body.machineId)).size).toBe(machines);
      for (const r of responses.filter((r) => r.status !== 201)) expectProblem(r, 409, 'no-capacity');
      // On the way: a lost race's 409 (capacity remained), or 503 throttled from a busy site, each with Retry-After.
      for (const answer of clients.flatMap((client) => client.answers)) {
        if (answer.status === 201 || answer.code === 'no-capacity') continue;
        expect([`409 concurrent-update`, '503 throttled']).toContain(`${answer.status} ${answer.code}`);
      }

      // The machines' side, ever: each machine's history shows exactly one assignment, of the winner that names it.
      // (Its state is not asserted: the winners are being provisioned meanwhile, and that is not this test's subject.)
      const fleet = (await site.call('GET', '/admin/machines?limit=500', { token: admin })).body.items as Array<{ id: string }>;
      const winnerOn = new Map(created.map((r) => [r.body.machineId as string, r.body.id as string]));
      expect(fleet).toHaveLength(machines);
      const histories = await Promise.all(
        fleet.map(async (machine) => {
          const { body } = await site.call('GET', `/admin/machines/${machine.id}/history?limit=500`, { token: admin });
          return {
            machine: machine.id,
            assigned: (body.items as Array<{ action: string; instanceId?: string }>).filter((h) => h.action === 'instance-created').map((h) => h.instanceId),
          };
        }),
      );
      for (const { machine, assigned } of histories) expect(assigned, machine).toEqual([winnerOn.get(machine)]);
    }, 120_000);
  });
}

describe('GET /admin/config', () => {
  let site: TestSite;
  let admin: string;
  beforeAll(async () => {
    site = await startTestSite({ config: siteConfig(4) });
    admin = await site.token('provider', ['provider-admin']);
  }, 60_000);
  afterAll(async () => site?.stop());

  it('shows the sweep, site agent, API and Lambda limits in force', async () => {
    const { status, body } = await site.call('GET', '/admin/config', { token: admin });
    expect(status).toBe(200);
    expect(body.config).toMatchObject({
      sweep: { interval_seconds: 60 },
      site_agent: { report_timeout_seconds: 90 },
      api: { rate_limit: 200, burst_limit: 400, routes: { 'POST /v2/org/{org}/nico/instance': { rate_limit: 50 } } },
      lambda: { tenant_reserved_concurrency: 100, admin_reserved_concurrency: 10, site_agent_reserved_concurrency: 20 },
    });
  });
});
