import type { DynamoDBRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, testConfig, type TestSite } from '#test/support/local-site.ts';
import { instanceStatus, machine, readySite, sources, type Actors } from '#test/support/repair-steps.ts';

// Declared maintenance on a local site, on NVLink domains that span racks, and with the stream's records of the
// maintenance and its machines lost: the sweep alone (the `due` index) then takes every step, hand-back, wave,
// validation and return, within the resync period.

const DAY = 86_400_000;
const RESYNC_SECONDS = 1;

/** Six gb200 machines on two racks; NVLink domains of two: nvl1 on rack 1, nvl2 across both, nvl3 on rack 2. */
const config = testConfig(`
[instance_create_retry]
base_delay_ms = 10
[maintenance]
resync_seconds = ${RESYNC_SECONDS}
[simulator]
machines = [ { type = "gb200", count = 6, racks = 2, nvlink_domain_size = 2 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 20
cleanup_ms = 20
maintenance_ms = 50
validation_ms = 50
`);

/** The entity records (machine, maintenance) whose stream records are lost while a test names them. */
const lost = new Set<string>();
const entityKey = (record: DynamoDBRecord): string => `${record.dynamodb?.Keys?.pk?.S}|${record.dynamodb?.Keys?.sk?.S}`;

describe('declared maintenance: scope and the sweep backstop', () => {
  let site: TestSite;
  let who: Actors;
  const show = async (id: string) => (await site.call('GET', `/admin/maintenance/${id}`, { token: who.admin })).body;
  const declare = (scope: object, handBackDays = 15) =>
    site.call('POST', '/admin/maintenance', {
      token: who.admin,
      body: {
        kind: 'planned',
        category: 'hardware',
        reason: 'tray swap',
        scope,
        handBackBy: new Date(Date.now() + handBackDays * DAY).toISOString(),
        windowMinutes: 60,
      },
    });
  const completed = (id: string) =>
    site.eventually(async () => {
      const shown = await show(id);
      return shown.state === 'Completed' ? shown : undefined;
    }, 30_000);

  beforeAll(async () => {
    ({ site, who } = await readySite(6, {
      config,
      aroundStreamHandler: (handle) => (event) => handle({ Records: event.Records.filter((record) => !lost.has(entityKey(record))) }),
    }));
  });
  afterAll(async () => site?.stop());

  it('resolves an NVLink domain to its machines across racks, beside a rack, and names a domain the site lacks', async () => {
    // The fleet summary's rack items, which resolve a domain, are kept by the stream: wait until they hold the fleet.
    await site.eventually(async () => (await site.call('GET', '/admin/fleet/summary', { token: who.admin })).body.machines === 6);
    const declared = await declare({ nvlinkDomains: ['gb200-nvl2'] });
    expect(declared.status, JSON.stringify(declared.body)).toBe(201);
    expect(declared.body.machineIds).toEqual(['gb200-r1-03', 'gb200-r2-01']);
    expect(declared.body.scope).toEqual({ nvlinkDomains: ['gb200-nvl2'] });
    expectProblem(await declare({ racks: ['rack-1'], nvlinkDomains: ['gb200-nvl9'] }), 422, 'unknown-scope');
    expectProblem(await declare({ racks: ['rack-2'] }), 409, 'maintenance-overlap');
    const done = await completed(declared.body.id);
    expect(Object.values(done.machines).map((m: any) => m.phase)).toEqual(['returned', 'returned']);
  });

  it('with the stream records of the maintenance and its machines lost, the sweep still hands back, waves, validates and returns', async () => {
    const created = await site.call('POST', '/v2/org/acme/nico/instance', { token: who.tenant, body: { machineType: 'gb200' } });
    const instance = await instanceStatus(site, who.tenant, 'acme', created.body.id, 'Ready');
    const other = ['gb200-r1-01', 'gb200-r2-03'].find((id) => id !== instance.machineId)!;
    for (const id of [instance.machineId, other]) lost.add(`MACHINE#${id}|#MACHINE`);
    const declared = await declare({ machineIds: [instance.machineId, other] });
    expect(declared.status, JSON.stringify(declared.body)).toBe(201);
    const { id } = declared.body;
    lost.add(`MAINTENANCE#${id}|#MAINTENANCE`);

    // The fan-out, the free machine's wave and its validated return come from the due index alone.
    await site.eventually(async () => (await show(id)).machines[other].phase === 'returned', 30_000);
    expect(await machine(site, who.admin, other)).toMatchObject({ validation: { reason: 'maintenance', state: 'passed' } });
    await site.eventually(async () => (await site.call('GET', `/v2/org/acme/nico/instance/${instance.id}`, { token: who.tenant })).body.maintenance);

    // The hand-back's cleanup ends in a write of the machine the stream never delivers: the resync finds it.
    const handBack = await site.call('POST', `/v2/org/acme/nico/maintenance/${id}/hand-back`, { token: who.tenant, body: { instanceIds: [instance.id] } });
    expect(handBack.status, JSON.stringify(handBack.body)).toBe(202);
    const done = await completed(id);
    expect(done.machines[instance.machineId]).toMatchObject({ phase: 'returned', handedBackAt: expect.any(String), returnedAt: expect.any(String) });
    expect(sources(await machine(site, who.admin, instance.machineId))).toEqual([]);
    lost.clear();
  });
});
