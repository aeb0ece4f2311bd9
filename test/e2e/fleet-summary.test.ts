import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliFor, shown, type CliRunner } from '#test/support/cli.ts';
import { startTestSite, type TestSite } from '#test/support/local-site.ts';

// The summary through the whole local runner: the real table stream (duplicated and reordered on purpose) keeps the
// aggregates, and once quiet they agree with the machine listing.

interface ListedMachine {
  machineType: string;
  rack: string;
  state: string;
  lifecycle: string;
  allocatable: boolean;
  notAllocatableReasons: string[];
  healthOverrides: Array<{ source: string }>;
}

describe('GET /admin/fleet/summary', () => {
  let site: TestSite;
  let token: string;
  let admin: CliRunner;

  beforeAll(async () => {
    site = await startTestSite({ streamChaos: { modes: ['duplicate', 'reorder'], seed: 5 } });
    token = await site.token('provider', ['provider-admin'], 'ops');
    admin = cliFor(site.url, token);
  });
  afterAll(async () => site?.stop());

  async function listing() {
    const items: ListedMachine[] = [];
    let nextToken: string | undefined;
    do {
      const page = (await site.call('GET', `/admin/machines?limit=100${nextToken ? `&nextToken=${encodeURIComponent(nextToken)}` : ''}`, { token })).body;
      items.push(...page.items);
      nextToken = page.nextToken;
    } while (nextToken);
    const tally = (pick: (m: ListedMachine) => string[]) => {
      const counts: Record<string, number> = {};
      for (const m of items) for (const key of pick(m)) counts[key] = (counts[key] ?? 0) + 1;
      return counts;
    };
    return {
      machines: items.length,
      allocatable: items.filter((m) => m.allocatable).length,
      stale: items.filter((m) => m.notAllocatableReasons.includes('heartbeat-stale')).length,
      byState: tally((m) => [m.state]),
      byOverride: tally((m) => [...new Set(m.healthOverrides.map((o) => o.source))]),
      byLifecycle: tally((m) => [m.lifecycle]),
      byRack: tally((m) => [`${m.machineType}/${m.rack}`]),
    };
  }

  /** The summary's counts, and each rack's machines as the racks listing tallies them (by type, page by page). */
  async function summary() {
    const { asOf: _asOf, byType, ...counts } = (await site.call('GET', '/admin/fleet/summary', { token })).body;
    const byRack: Record<string, number> = {};
    for (const type of Object.keys(byType)) {
      let nextToken: string | undefined;
      do {
        const query = `machineType=${type}&limit=3${nextToken ? `&nextToken=${encodeURIComponent(nextToken)}` : ''}`;
        const page = (await site.call('GET', `/admin/fleet/racks?${query}`, { token })).body;
        for (const r of page.items as Array<{ rack: string; tally: { machines: number } }>)
          if (r.tally.machines > 0) byRack[`${type}/${r.rack}`] = r.tally.machines;
        nextToken = page.nextToken;
      } while (nextToken);
    }
    return { ...counts, byRack };
  }

  it('agrees with the machine listing after a burst of registrations and overrides', async () => {
    const registered = Array.from({ length: 30 }, (_, i) => ({ id: `burst-${i}`, machineType: i % 3 === 0 ? 'h100' : 'gb200', rack: `burst-r${i % 4}` }));
    // As a provider's script registers: a registration out of time (503) is sent again, after its Retry-After.
    const register = async (machines: unknown[]) => {
      for (;;) {
        const answer = await site.call('POST', '/admin/machines', { token, body: { machines } });
        if (answer.status !== 503) return answer;
        await new Promise((resolve) => setTimeout(resolve, Number(answer.headers.get('retry-after') ?? 1) * 1000));
      }
    };
    expect((await register(registered)).status).toBe(200);
    await Promise.all(
      ['burst-1', 'burst-2', 'burst-3'].map((id) =>
        site.call('POST', `/admin/machines/${id}/health-overrides`, { token, body: { template: 'out-for-repair' } }),
      ),
    );
    expect((await register([{ id: 'burst-4', machineType: 'gb200', rack: 'burst-moved' }])).status).toBe(200);

    const agreed = await site.eventually(async () => {
      const [expected, actual] = await Promise.all([listing(), summary()]);
      return sameCounts(expected, actual) ? actual : undefined;
    }, 20_000);
    expect(agreed.byOverride).toMatchObject({ 'out-for-repair': 3 });
    expect(agreed.byRack).toMatchObject({ 'gb200/burst-moved': 1 });

    const json = await admin(['machine', 'summary', '-f', 'json']);
    expect(json.code, shown(['machine', 'summary'], json)).toBe(0);
    expect(json.json()).toMatchObject({ machines: agreed.machines, byOverride: { 'out-for-repair': 3 } });
    const table = await admin(['machine', 'summary']);
    expect(table.stdout).toMatch(new RegExp(`^machines:\\s+${agreed.machines}$`, 'm'));
    expect(table.stdout).toMatch(new RegExp(`^gb200\\s+${json.json().byType.gb200.machines}\\s+`, 'm'));
    const racks = await admin(['machine', 'racks', '--machine-type', 'gb200']);
    expect(racks.code, shown(['machine', 'racks'], racks)).toBe(0);
    expect(racks.stdout).toMatch(/^gb200\s+burst-moved\s+1\s+/m);
  });

  it("names each reserved machine's reservation in its rack entry, and none once released, whatever the stream's order", async () => {
    /** Each machine of the type's racks that a rack entry names a reservation for, with that reservation's id. */
    const reservedInRacks = async () => {
      const held: Record<string, string> = {};
      const page = (await site.call('GET', '/admin/fleet/racks?machineType=h100', { token })).body;
      for (const rack of page.items as Array<{ machines: Record<string, { reservation?: { id: string; org: string } }> }>)
        for (const [id, m] of Object.entries(rack.machines)) if (m.reservation) held[id] = `${m.reservation.id}/${m.reservation.org}`;
      return held;
    };
    const created = await site.call('POST', '/admin/reservations', { token, body: { org: 'acme', machineType: 'h100', count: 2 } });
    expect(created.status).toBe(201);
    const { id, machineIds } = created.body as { id: string; machineIds: string[] };
    const expected = Object.fromEntries(machineIds.map((m) => [m, `${id}/acme`]));
    await site.eventually(async () => sameCounts(expected, await reservedInRacks()), 20_000);
    const racks = await admin(['machine', 'racks', '--machine-type', 'h100']);
    expect(racks.stdout).toMatch(new RegExp(`\\s${id}$`, 'm'));

    expect((await site.call('DELETE', `/admin/reservations/${id}`, { token })).status).toBe(200);
    await site.eventually(async () => Object.keys(await reservedInRacks()).length === 0, 20_000);
    expect((await admin(['machine', 'racks', '--machine-type', 'h100'])).stdout).not.toContain(id);
  });
});

function sameCounts(expected: Record<string, unknown>, actual: Record<string, unknown>): boolean {
  const canonical = (value: unknown): unknown =>
    value && typeof value === 'object'
      ? Object.fromEntries(
          Object.entries(value)
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([k, v]) => [k, canonical(v)]),
        )
      : value;
  return JSON.stringify(canonical(expected)) === JSON.stringify(canonical(actual));
}
