import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startTestSite, testConfig, type TestSite } from '#test/support/local-site.ts';

// Bounded contention: far more creates than machines, all at once. Each create tries a few machines
// and then answers; whatever it answers, no machine is given twice and nothing fails with a 5xx. Once as the local
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
      await site.eventually(
        async () => (await site.call('GET', '/admin/machines?allocatable=true&limit=500', { token: admin })).body.items.length === machines,
        30_000,
      );
    }, 60_000);
    afterAll(async () => site?.stop());

    const title = `${requests} concurrent creates on ${machines} machines: exactly ${machines} win, no machine twice, every other a clean 409`;
    it(`${title} (or 503 throttled)`, async () => {
      const orgs = ['acme', 'globex', 'initech', 'umbrella'];
      const tokens = await Promise.all(orgs.map((org) => site.token(org, ['tenant'])));
      const responses = await Promise.all(
        Array.from({ length: requests }, (_, i) =>
          site.call('POST', `/v2/org/${orgs[i % orgs.length]}/nico/instance`, {
            token: tokens[i % orgs.length]!,
            body: { machineType: 'gb200', name: `rush-${i}` },
          }),
        ),
      );

      const created = responses.filter((r) => r.status === 201);
      expect(created).toHaveLength(machines);
      expect(new Set(created.map((r) => r.body.machineId)).size).toBe(machines);
      const refused = responses.filter((r) => r.status !== 201);
      expect(refused).toHaveLength(requests - machines);
      for (const r of refused) {
        // A throttled site (AWS, or FLEETWARD_AWS_SEMANTICS=throttle) may also answer 503 throttled, to be retried later.
        if (r.status === 503) {
          expectProblem(r, 503, 'throttled');
          expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
          continue;
        }
        expectProblem(r, 409);
        expect(['no-capacity', 'concurrent-update']).toContain(r.body.code);
      }
      // Every machine is taken now: once the allocatable index shows it (at once on DynamoDB Local, within the lag
      // under index-lag, when a burst's refusals may all be the retryable concurrent-update), a create is told so.
      await site.indexesCaughtUp();
      const late = await site.call('POST', `/v2/org/${orgs[0]}/nico/instance`, { token: tokens[0]!, body: { machineType: 'gb200', name: 'late' } });
      expectProblem(late, 409, 'no-capacity');

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

      // A refusal that said capacity remained is retryable: now that the type is full, a retry says no-capacity.
      const retried = await site.call('POST', '/v2/org/acme/nico/instance', { token: tokens[0]!, body: { machineType: 'gb200', name: 'rush-retry' } });
      expectProblem(retried, 409, 'no-capacity');
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
