import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliFor } from '#test/support/cli.ts';
import { startTestSite, testConfig, type TestSite } from '#test/support/local-site.ts';

// A tenant org's capacity (GET .../capacity) and node records (GET .../nodes) through the whole local runner: the
// real table stream, duplicated, reordered and delayed on purpose, keeps the counters; once quiet they equal a
// recount from the instance and machine listings.

const ORGS = ['acme', 'globex'] as const;
const TYPES = ['gb200', 'h100'] as const;
const GPUS = { gb200: 4, h100: 8 } as const;

interface Instance {
  id: string;
  machineId: string;
  machineType: string;
  status: string;
  labels: Record<string, string>;
}

interface Machine {
  id: string;
  machineType: string;
  instanceId?: string;
  notAllocatableReasons: string[];
}

describe('a tenant org capacity', () => {
  let site: TestSite;
  let admin: string;
  const tenant: Record<string, string> = {};

  beforeAll(async () => {
    site = await startTestSite({
      config: testConfig(`
[instance_create_retry]
base_delay_ms = 10
timeout_ms = 2000
[simulator]
machines = [ { type = "gb200", count = 12, racks = 2 }, { type = "h100", count = 12, racks = 2 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 20
cleanup_ms = 20
`),
      streamChaos: { modes: ['duplicate', 'reorder', 'delay'], seed: 28 },
    });
    admin = await site.token('provider', ['provider-admin'], 'ops');
    for (const org of ORGS) tenant[org] = await site.token(org, ['tenant']);
    await site.eventually(async () => (await site.call('GET', '/admin/machines?allocatable=true&limit=100', { token: admin })).body.items.length >= 24, 60_000);
  }, 90_000);
  afterAll(async () => site?.stop());

  async function all<T>(path: string, token: string): Promise<T[]> {
    const items: T[] = [];
    let nextToken: string | undefined;
    do {
      const page = (
        await site.call('GET', `${path}${path.includes('?') ? '&' : '?'}limit=100${nextToken ? `&nextToken=${encodeURIComponent(nextToken)}` : ''}`, { token })
      ).body;
      items.push(...page.items);
      nextToken = page.nextToken;
    } while (nextToken);
    return items;
  }

  /** What the org's capacity is, recounted from its instances and the machines they hold (no reservations yet). */
  async function recount(org: string) {
    const machines = new Map((await all<Machine>('/admin/machines', admin)).map((m) => [m.id, m]));
    const holding = (await all<Instance>(`/v2/org/${org}/nico/instance`, tenant[org]!)).filter(
      (i) => ['Provisioning', 'Ready', 'Repairing', 'Terminating'].includes(i.status) && machines.get(i.machineId)?.instanceId === i.id,
    );
    const byType: Record<string, { delivered: number; healthy: number; inUse: number }> = {};
    for (const instance of holding) {
      const counts = (byType[instance.machineType] ??= { delivered: 0, healthy: 0, inUse: 0 });
      const unfit = machines
        .get(instance.machineId)!
        .notAllocatableReasons.filter((r) => r.startsWith('health-override:') || r === 'cleanup-failed' || r === 'heartbeat-stale');
      counts.delivered += 1;
      if (unfit.length === 0) counts.healthy += 1;
      if (instance.status === 'Ready' || instance.status === 'Repairing') counts.inUse += 1;
    }
    return { byType, holding };
  }

  async function capacity(org: string) {
    const { body } = await site.call('GET', `/v2/org/${org}/nico/capacity`, { token: tenant[org]! });
    const byType: Record<string, { delivered: number; healthy: number; inUse: number }> = {};
    for (const [type, t] of Object.entries(body.byType as Record<string, Record<string, { machines: number; gpus: number }>>)) {
      byType[type] = { delivered: t.delivered!.machines, healthy: t.healthy!.machines, inUse: t.inUse!.machines };
      for (const count of ['delivered', 'healthy', 'reserved', 'inUse']) expect(t[count]!.gpus).toBe(t[count]!.machines * GPUS[type as keyof typeof GPUS]);
    }
    return byType;
  }

  it('equals a recount once quiet, after hundreds of changes under stream chaos; nodes list exactly the delivered machines', { timeout: 120_000 }, async () => {
    const live: Record<string, string[]> = { acme: [], globex: [] };
    for (let round = 0; round < 6; round++) {
      await Promise.all(
        ORGS.map(async (org) => {
          for (let i = 0; i < 3; i++) {
            const machineType = TYPES[(round + i) % 2]!;
            const labels = i === 0 ? { project: `p-${round}` } : {};
            const created = await site.call('POST', `/v2/org/${org}/nico/instance`, { token: tenant[org]!, body: { machineType, labels } });
            if (created.status === 201) live[org]!.push(created.body.id);
          }
          for (const id of live[org]!.splice(0, 2)) await site.call('DELETE', `/v2/org/${org}/nico/instance/${id}`, { token: tenant[org]! });
        }),
      );
      const held = (await all<Machine>('/admin/machines', admin)).filter((m) => m.instanceId);
      const quarantined = held[round % held.length];
      if (quarantined) await site.call('POST', `/admin/machines/${quarantined.id}/health-overrides`, { token: admin, body: { template: 'out-for-repair' } });
      const restored = held[(round + 3) % held.length];
      if (restored && round % 2 === 1) await site.call('DELETE', `/admin/machines/${restored.id}/health-overrides/out-for-repair`, { token: admin });
    }

    for (const org of ORGS) {
      let last: { expected: Awaited<ReturnType<typeof recount>>; actual: Awaited<ReturnType<typeof capacity>> } | undefined;
      await site
        .eventually(async () => {
          await site.streamIdle();
          last = { expected: await recount(org), actual: await capacity(org) };
          return isDeepStrictEqual(last.expected.byType, last.actual);
        }, 20_000)
        .catch(() => undefined);
      expect(last!.actual).toEqual(last!.expected.byType);
      const agreed = last!.expected;
      expect(agreed.holding.length).toBeGreaterThan(0);
      const nodes = await all<{ nodeId: string; org: string; instanceId?: string; project?: string; region: string; gpuCount: number; machineType: string }>(
        `/v2/org/${org}/nico/nodes`,
        tenant[org]!,
      );
      expect(nodes.map((n) => n.nodeId).sort()).toEqual(agreed.holding.map((i) => i.machineId).sort());
      for (const node of nodes) {
        const instance = agreed.holding.find((i) => i.machineId === node.nodeId)!;
        expect(node).toMatchObject({ org, instanceId: instance.id, region: 'dc1', gpuCount: GPUS[node.machineType as keyof typeof GPUS] });
        expect(node.project).toBe(instance.labels.project);
      }
    }

    // The CLI shows the same, for people (a row per type) and for scripts (the API's answer).
    const cli = cliFor(site.url, tenant.acme);
    const { asOf: _asOf, ...shown } = (await cli(['capacity', 'show', '-f', 'json'])).json();
    const { asOf: _apiAsOf, ...api } = (await site.call('GET', '/v2/org/acme/nico/capacity', { token: tenant.acme! })).body;
    expect(shown).toEqual(api);
    const table = (await cli(['capacity', 'show'])).stdout;
    expect(table).toMatch(/^TYPE\s+DELIVERED\s+HEALTHY\s+RESERVED\s+IN USE/);
    for (const [type, counts] of Object.entries(api.byType as Record<string, { delivered: { machines: number; gpus: number } }>)) {
      expect(table).toMatch(new RegExp(`^${type}\\s+${counts.delivered.machines} \\(${counts.delivered.gpus} GPUs\\)`, 'm'));
    }
    const nodes = (await cli(['capacity', 'nodes', '-f', 'json'])).json();
    expect(nodes.items).toEqual(await all('/v2/org/acme/nico/nodes', tenant.acme!));
  });

  it("shows an org only its own: another org's is not found, and an org without machines has no counts", async () => {
    expect((await site.call('GET', '/v2/org/globex/nico/capacity', { token: tenant.acme! })).status).toBe(404);
    expect((await site.call('GET', '/v2/org/globex/nico/nodes', { token: tenant.acme! })).status).toBe(404);
    const stranger = await site.token('initech', ['tenant']);
    expect((await site.call('GET', '/v2/org/initech/nico/capacity', { token: stranger })).body.byType).toEqual({});
    expect((await site.call('GET', '/v2/org/initech/nico/nodes', { token: stranger })).body).toEqual({ items: [] });
  });
});
