import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig, type TestSite } from '#test/support/local-site.ts';
import { deliveredOf, machine, readySite, reportIssue, sources, type Actors } from '#test/support/repair-steps.ts';

// The site config's defaults (API.md "Site config", docs/guide.md "Fleet safety") wired end to end: only the simulator's
// fleet and speed are set here, everything under test comes from the defaults.

const FLEET = 20;
const simulatorOnly = `
[simulator]
machines = [ { type = "gb200", count = ${FLEET}, racks = 2 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 10
cleanup_ms = 10
`;

const start = (toml: string): Promise<{ site: TestSite; who: Actors }> => readySite(FLEET, { config: testConfig(toml) });

describe('the defaults: auto-repair on, repair-storm breaker at max_fraction = 0.1', () => {
  let site: TestSite;
  let who: Actors;
  beforeAll(async () => ({ site, who } = await start(simulatorOnly)));
  afterAll(async () => site?.stop());

  it('are the config in force', async () => {
    const { body } = await site.call('GET', '/admin/config', { token: who.admin });
    expect(body.config).toMatchObject({
      auto_machine_repair_plugin: { enabled: true },
      repair_storm: { max_quarantines: 10, max_fraction: 0.1, window_minutes: 60 },
      site: { region: 'dc1' },
      catalog: { gpus_per_machine: { gb200: 4, h100: 8 } },
    });
    expect(body.typesWithoutGpuCount).toEqual([]);
  });

  it(`a fleet of ${FLEET}: two reports get repair requests, the third (more than 10% of the fleet, far below max_quarantines) trips the breaker`, {
    timeout: 60_000,
  }, async () => {
    const requested = [
      await reportIssue(site, who, { category: 'hardware', summary: 'one' }),
      await reportIssue(site, who, { category: 'hardware', summary: 'two' }),
    ];
    for (const id of requested) {
      expect(sources(await machine(site, who.admin, id))).toEqual(['repair-request', 'tenant-reported-issue']);
      await site.eventually(async () => deliveredOf(site, 'RepairRequested', id).length === 1);
    }
    expect((await site.call('GET', '/admin/safety', { token: who.admin })).body.repairStorm).toEqual({ state: 'closed', heldBack: [] });

    const third = await reportIssue(site, who, { category: 'hardware', summary: 'three' });
    expect(sources(await machine(site, who.admin, third))).toEqual(['tenant-reported-issue']);
    expect((await site.call('GET', '/admin/safety', { token: who.admin })).body.repairStorm).toMatchObject({ state: 'tripped', heldBack: [third] });
    const storm = await site.eventually(async () => deliveredOf(site, 'RepairStormDetected')[0]);
    expect(storm.detail).toMatchObject({ machineId: third, repairRequestHeldBack: true });
    await site.eventually(async () => deliveredOf(site, 'MachineQuarantined', third).length === 1);
    await site.streamIdle();
    expect(deliveredOf(site, 'RepairRequested', third)).toEqual([]);
  });
});

describe('auto-repair off ([auto_machine_repair_plugin] enabled = false, everything else default)', () => {
  let site: TestSite;
  let who: Actors;
  beforeAll(async () => ({ site, who } = await start(`${simulatorOnly}\n[auto_machine_repair_plugin]\nenabled = false\n`)));
  afterAll(async () => site?.stop());

  it('is the config in force', async () => {
    const { body } = await site.call('GET', '/admin/config', { token: who.admin });
    expect(body.config).toMatchObject({ auto_machine_repair_plugin: { enabled: false }, repair_storm: { max_fraction: 0.1 } });
  });
  it('a release with an issue quarantines, but requests no repair and emits no RepairRequested; nothing is held back, so the breaker stays closed', {
    timeout: 60_000,
  }, async () => {
    const reported: string[] = [];
    // Three reports: as many as trip the breaker above.
    for (const summary of ['one', 'two', 'three']) reported.push(await reportIssue(site, who, { category: 'network', summary }));
    for (const id of reported) {
      const m = await machine(site, who.admin, id);
      expect(sources(m)).toEqual(['tenant-reported-issue']);
      expect(m.allocatable).toBe(false);
      await site.eventually(async () => deliveredOf(site, 'MachineQuarantined', id).length === 1);
    }
    await site.streamIdle();
    expect(deliveredOf(site, 'RepairRequested')).toEqual([]);
    expect(deliveredOf(site, 'RepairStormDetected')).toEqual([]);
    expect((await site.call('GET', '/admin/safety', { token: who.admin })).body.repairStorm).toEqual({ state: 'closed', heldBack: [] });
  });
});

describe('a machine type that [catalog] gpus_per_machine does not name', () => {
  let site: TestSite;
  let who: Actors;
  beforeAll(async () => ({ site, who } = await start(`${simulatorOnly}\n[site]\nregion = "eu-north-2"\n[catalog]\ngpus_per_machine = { h100 = 8 }\n`)));
  afterAll(async () => site?.stop());

  it('counts 0 GPUs and is named by GET /admin/config', async () => {
    const { body } = await site.call('GET', '/admin/config', { token: who.admin });
    expect(body.config).toMatchObject({ site: { region: 'eu-north-2' }, catalog: { gpus_per_machine: { h100: 8 } } });
    expect(body.typesWithoutGpuCount).toEqual(['gb200']);
  });
});
