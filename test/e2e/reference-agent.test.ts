// The local site with FLEETWARD_AGENT=reference: the reference agent (agent/) serves the demo fleet, each machine an
// ipmi_sim BMC whose "power on" starts a process standing for the machine. The flows the simulator plays pass through
// real IPMI: create → Ready (the provision hook boots the machine), power cycle (a new machine process), release
// (the cleanup hook powers it off), and a release with an issue through repair back to the pool.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ipmiToolsInstalled } from '#agent/support/ipmi-sim.ts';
import { testConfig, type TestSite } from '#test/support/local-site.ts';
import {
  claimForRepair,
  cleanedUp,
  instanceStatus,
  readySite,
  repairRelease,
  reportIssue,
  runInstance,
  setRepairStatus,
  type Actors,
} from '#test/support/repair-steps.ts';

const tools = ipmiToolsInstalled();
if (!tools) console.warn('SKIPPED: the reference agent e2e test: ipmi_sim and ipmitool are not installed (apt-get install -y openipmi ipmitool)');

const config = testConfig(`
[instance_create_retry]
base_delay_ms = 10
timeout_ms = 10000
[repair_storm]
max_quarantines = 1000
max_fraction = 1
[simulator]
machines = [ { type = "gb200", count = 4, racks = 1 } ]
heartbeat_interval_seconds = 0.5
`);

describe.skipIf(!tools)('the local site on the reference agent', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'e2e-reference-agent-'));
  let site: TestSite;
  let who: Actors;
  /** The pid of the process standing for the machine while its BMC says "on". */
  const machinePid = (machineId: string): number | undefined => {
    const file = join(dataDir, 'reference-agent', 'bmc', machineId, 'machine.pid');
    if (!existsSync(file)) return undefined;
    const pid = Number(readFileSync(file, 'utf8').trim());
    try {
      process.kill(pid, 0);
      return pid;
    } catch {
      return undefined;
    }
  };

  /** ipmitool against a machine's BMC, as an operator would (its port is in the agent config the runner wrote). */
  const bmcTool = (machineId: string, ...command: string[]) => {
    const toml = readFileSync(join(dataDir, 'reference-agent', 'agent.toml'), 'utf8');
    const port = new RegExp(`id = "${machineId}"[\\s\\S]*?port = (\\d+)`).exec(toml)![1]!;
    const args = ['-I', 'lanplus', '-C', '3', '-H', '127.0.0.1', '-p', port, '-U', 'admin', '-E', ...command];
    execFileSync('ipmitool', args, { env: { ...process.env, IPMI_PASSWORD: 'local-bmc' }, stdio: 'ignore' });
  };

  beforeAll(async () => {
    ({ site, who } = await readySite(4, { config, agent: 'reference', persistDir: dataDir }));
  }, 60_000);
  afterAll(async () => {
    await site?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('create → Ready boots the machine through its BMC; a power cycle restarts it; a release powers it off', async () => {
    const instance = await runInstance(site, who);
    const booted = machinePid(instance.machineId);
    expect(booted).toBeDefined();

    const cycled = await site.call('POST', `/v2/org/acme/nico/instance/${instance.id}/power`, { token: who.tenant, body: { action: 'cycle' } });
    expect(cycled.status).toBe(202);
    const settled = await site.eventually(async () => {
      const { body } = await site.call('GET', `/v2/org/acme/nico/instance/${instance.id}`, { token: who.tenant });
      return body.power?.result === 'pending' ? undefined : body;
    }, 20_000);
    expect(settled.power).toMatchObject({ action: 'cycle', state: 'on', result: 'accepted' });
    await site.eventually(async () => machinePid(instance.machineId) !== undefined && machinePid(instance.machineId) !== booted, 10_000);

    expect((await site.call('DELETE', `/v2/org/acme/nico/instance/${instance.id}`, { token: who.tenant })).status).toBe(202);
    await instanceStatus(site, who.tenant, 'acme', instance.id, 'Terminated');
    await cleanedUp(site, who.admin, instance.machineId);
    await site.eventually(async () => machinePid(instance.machineId) === undefined, 5_000);
    expect(site.logLines.some((l) => l.includes(`reported cleanup of ${instance.machineId}`))).toBe(true);
  }, 60_000);

  it('a release with an issue goes through repair, validation by the DCGM hook, and back to the pool', async () => {
    const machineId = await reportIssue(site, who);
    const repairInstance = await claimForRepair(site, who, machineId);
    await setRepairStatus(site, who, machineId, 'completed');
    const after = await repairRelease(site, who, repairInstance, machineId);
    expect(after.validation).toMatchObject({ reason: 'repair', state: 'passed' });
    expect(after.allocatable).toBe(true);
    expect(site.logLines.some((l) => l.includes(`validate hook for ${machineId}: ok`))).toBe(true);
  }, 90_000);

  it('a fault in a BMC’s event log quarantines the machine and its meta-instance member is replaced; clearing it lifts that', async () => {
    const created = await site.call('POST', '/v2/org/acme/nico/meta-instance', { token: who.tenant, body: { machineType: 'gb200', minNodes: 2 } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const group = () => site.call('GET', `/v2/org/acme/nico/meta-instance/${created.body.id}`, { token: who.tenant }).then((r) => r.body);
    const machineOf = async (instanceId: string) => (await site.call('GET', `/v2/org/acme/nico/instance/${instanceId}`, { token: who.tenant })).body.machineId;
    const placed = await site.eventually(async () => ((await group()).instanceIds.length === 2 ? group() : undefined), 20_000);
    const victim = placed.instanceIds[0] as string;
    const machineId = await machineOf(victim);

    // An uncorrectable ECC error, as the BMC logs it (ipmitool's event-file format: EvM rev, sensor type 0x0c
    // memory, sensor 1, sensor-specific event, offset 1 "Uncorrectable ECC").
    const events = join(dataDir, 'ecc.sel');
    writeFileSync(events, '0x04 0x0c 0x01 0x6f 0x01 0xff 0xff\n');
    bmcTool(machineId, 'sel', 'add', events);
    const quarantined = await site.eventually(async () => {
      const m = (await site.call('GET', `/admin/machines/${machineId}`, { token: who.admin })).body;
      return m.healthOverrides.some((o: { source: string }) => o.source === 'hardware-health') ? m : undefined;
    }, 20_000);
    expect(JSON.stringify(quarantined.healthOverrides)).toContain('Uncorrectable ECC');
    await site.eventually(async () => {
      const shown = await group();
      if (shown.instanceIds.length !== 2 || shown.instanceIds.includes(victim)) return undefined;
      const machines = await Promise.all(shown.instanceIds.map(machineOf));
      return !machines.includes(machineId);
    }, 30_000);

    bmcTool(machineId, 'sel', 'clear');
    await site.eventually(async () => {
      const m = (await site.call('GET', `/admin/machines/${machineId}`, { token: who.admin })).body;
      return !m.healthOverrides.some((o: { source: string }) => o.source === 'hardware-health');
    }, 20_000);
    expect((await site.call('DELETE', `/v2/org/acme/nico/meta-instance/${created.body.id}`, { token: who.tenant })).status).toBe(202);
  }, 90_000);

  it('/_sim controls are the simulator’s: not served for the reference agent', async () => {
    expect((await site.call('GET', '/_sim/requests')).status).toBe(404);
  });
});
