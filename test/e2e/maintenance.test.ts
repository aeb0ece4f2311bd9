import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveredOf, instanceStatus, listedWith, machine, readySite, sources, type Actors } from '#test/support/repair-steps.ts';
import { expectProblem, testConfig, type TestSite } from '#test/support/local-site.ts';

// Declared maintenance end to end on a local site: the declaration over HTTP, the fan-out by the stream, the
// tenant's notice and hand-back, waves on the simulated agent and its reports, events on the bus.

const DAY = 86_400_000;

describe('declared maintenance', () => {
  let site: TestSite;
  let who: Actors;
  beforeAll(async () => {
    ({ site, who } = await readySite(4, {
      config: testConfig(`
[instance_create_retry]
base_delay_ms = 10
[simulator]
machines = [ { type = "gb200", count = 4, racks = 2 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 20
cleanup_ms = 20
maintenance_ms = 50
`),
    }));
  });
  afterAll(async () => site?.stop());

  const show = async (id: string) => (await site.call('GET', `/admin/maintenance/${id}`, { token: who.admin })).body;

  it('takes a rack out of allocation, tells the tenant, works in waves and returns every machine', async () => {
    const created = await site.call('POST', '/v2/org/acme/nico/instance', { token: who.tenant, body: { machineType: 'gb200' } });
    const instance = await instanceStatus(site, who.tenant, 'acme', created.body.id, 'Ready');
    const rack = (await machine(site, who.admin, instance.machineId)).rack as string;

    const body = {
      kind: 'planned',
      category: 'firmware',
      reason: 'BMC firmware 2.4',
      impact: 'each machine reboots once',
      scope: { racks: [rack] },
      handBackBy: new Date(Date.now() + 15 * DAY).toISOString(),
      windowMinutes: 60,
      rollout: { maxInFlight: 1 },
    };
    const declared = await site.call('POST', '/admin/maintenance', { token: who.admin, body });
    expect(declared.status, JSON.stringify(declared.body)).toBe(201);
    const { id, machineIds } = declared.body as { id: string; machineIds: string[] };
    expect(machineIds).toContain(instance.machineId);

    const notice = await site.eventually(
      async () => (await site.call('GET', `/v2/org/acme/nico/instance/${instance.id}`, { token: who.tenant })).body.maintenance,
    );
    expect(notice).toMatchObject({ id, kind: 'planned', category: 'firmware', impact: 'each machine reboots once' });
    const noticed = await site.call('GET', `/v2/org/acme/nico/instance/${instance.id}`, { token: who.tenant });
    expect(noticed.body).toMatchObject({ health: 'maintenance-required' });
    expect(noticed.body.healthDetail).toContain(id);
    await site.eventually(async () => deliveredOf(site, 'MaintenanceDeclared').length === 1);
    expect(deliveredOf(site, 'MaintenanceDeclared')[0]!.detail).toMatchObject({ maintenanceId: id, org: 'acme', instanceIds: [instance.id] });

    const overlap = await site.call('POST', '/admin/maintenance', { token: who.admin, body: { ...body, scope: { machineIds: [instance.machineId] } } });
    expectProblem(overlap, 409, 'maintenance-overlap');

    const seen = await site.call('GET', `/v2/org/acme/nico/maintenance/${id}`, { token: who.tenant });
    expect(Object.keys(seen.body.machines)).toEqual([instance.machineId]);
    const other = await site.token('globex', ['tenant']);
    expectProblem(await site.call('GET', `/v2/org/globex/nico/maintenance/${id}`, { token: other }), 404, 'not-found');

    // The free machine of the rack goes through its wave while the held one waits for its tenant.
    const free = machineIds.find((m) => m !== instance.machineId)!;
    await site.eventually(async () => (await show(id)).machines[free].phase === 'returned');
    // Validated return: the work done, the machine passed a validation for maintenance before it came back.
    const returned = await machine(site, who.admin, free);
    expect(sources(returned)).toEqual([]);
    expect(returned).toMatchObject({ lifecycle: 'available', validation: { reason: 'maintenance', state: 'passed' } });

    const handBack = await site.call('POST', `/v2/org/acme/nico/maintenance/${id}/hand-back`, { token: who.tenant, body: { instanceIds: [instance.id] } });
    expect(handBack.status, JSON.stringify(handBack.body)).toBe(202);
    const done = await site.eventually(async () => {
      const shown = await show(id);
      return shown.state === 'Completed' ? shown : undefined;
    }, 20_000);
    expect(done.machines[instance.machineId]).toMatchObject({ phase: 'returned', overdue: false });
    expect(sources(await machine(site, who.admin, instance.machineId))).toEqual([]);
    await site.eventually(async () => deliveredOf(site, 'MaintenanceCompleted').length === 1);
    expect(done.history.map((h: { action: string }) => h.action)).toContain('maintenance-declared');
    expect(await listedWith(site, '/admin/maintenance?state=Completed', who.admin, id)).toEqual([id]);
  });
});
