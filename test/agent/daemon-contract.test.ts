// The daemon as the controller sees it: every route of the agent contract, signed calls only, heartbeats in parts,
// hooks run once per create, power through the machine's BMC (a Redfish mockup service here).

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inRosterPart } from '#agent/controller/roster-part.ts';
import { signingHeaders } from '#site/request-signing.ts';
import { startAgentProcess, TEST_KEY, writeAgentConfig, type AgentProcess } from './support/agent-process.ts';
import { startRecordingController, type RecordingController } from './support/recording-controller.ts';
import { startRedfishMockup, type RedfishMockup } from './support/redfish-mockup-server.ts';

const dir = mkdtempSync(join(tmpdir(), 'agent-contract-'));
const hookLog = join(dir, 'hooks.log');
const MACHINES = ['h100-r1-01', 'h100-r1-02', 'h100-r1-03', 'h100-r1-04', 'h100-r1-05', 'h100-r1-06'];
/** h100-r1-06's BMC refuses the agent's credentials. */
const passwordVariable = (id: string) => (id === 'h100-r1-06' ? 'AGENT_TEST_WRONG' : 'AGENT_TEST_REDFISH_PASSWORD');
const hookLines = () => readFileSync(hookLog, 'utf8').trim().split('\n');
const until = async (check: () => boolean, what: string, ms = 10_000) => {
  for (const start = Date.now(); !check(); ) {
    if (Date.now() - start > ms) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

describe('the reference agent daemon', () => {
  let controller: RecordingController;
  let bmc: RedfishMockup;
  let agent: AgentProcess;

  beforeAll(async () => {
    controller = await startRecordingController();
    bmc = await startRedfishMockup({ dir: join(import.meta.dirname, 'fixtures', 'redfish-mockup'), user: 'root', password: 'calvin' });
    process.env.AGENT_TEST_REDFISH_PASSWORD = 'calvin';
    process.env.AGENT_TEST_WRONG = 'not-calvin';
    writeFileSync(join(dir, 'nic-alert.json'), JSON.stringify({ alerts: [{ id: 'nic', message: 'eth1 down', classifications: ['PreventAllocations'] }] }));
    const tests = [
      { test: 'dcgm-diag-r1', passed: true },
      { test: 'nccl', passed: false, message: 'busbw 12 GB/s' },
    ];
    writeFileSync(join(dir, 'validation-lines'), tests.map((t) => JSON.stringify(t)).join('\n'));
    const record = `echo "$FLEETWARD_HOOK $FLEETWARD_MACHINE_ID $FLEETWARD_INSTANCE_NAME $FLEETWARD_CLIENT_TOKEN $FLEETWARD_VALIDATION_ID" >> ${hookLog}`;
    const config = writeAgentConfig(dir, {
      controllerUrl: controller.url,
      token: controller.token,
      machines: MACHINES.map((id) => ({
        id,
        bmc: `{ driver = "redfish", url = "${bmc.url}", user = "root", password = { env = "${passwordVariable(id)}" } }`,
        ...(id === 'h100-r1-02'
          ? {
              probes: `[{ kind = "command", command = "cat ${join(dir, 'nic-alert.json')}" }]`,
            }
          : {}),
      })),
      hooks: `provision = { command = '${record}', timeout_seconds = 5 }
cleanup = { command = '${record}; echo wiped; echo disks clean', timeout_seconds = 5 }
validate = { command = '${record}; cat ${join(dir, 'validation-lines')}; exit 1', timeout_seconds = 5 }
maintenance = { command = '${record}; echo firmware 1.2.3 applied', timeout_seconds = 5 }`,
      extra: 'heartbeat_parts = 4',
    });
    agent = await startAgentProcess(config);
  });
  afterAll(async () => {
    await agent?.kill();
    await controller?.stop();
    await bmc?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses with 401 {"error":"unauthorized"} a call unsigned, signed by an unknown key or wrong secret, stale, or to no route', async () => {
    const unsigned = await fetch(`${agent.url}/instances/x`);
    expect([unsigned.status, await unsigned.json()]).toEqual([401, { error: 'unauthorized' }]);
    expect((await agent.call('GET', '/instances/x', undefined, { id: 'other', secret: TEST_KEY.secret })).status).toBe(401);
    expect((await agent.call('GET', '/instances/x', undefined, { id: TEST_KEY.id, secret: `${TEST_KEY.secret}-wrong` })).status).toBe(401);
    const stale = await fetch(`${agent.url}/instances/x`, {
      headers: {
        [signingHeaders.keyId]: 'k1',
        [signingHeaders.timestamp]: String(Math.floor(Date.now() / 1000) - 301),
        [signingHeaders.signature]: `v1=${'0'.repeat(64)}`,
      },
    });
    expect(stale.status).toBe(401);
    expect((await fetch(`${agent.url}/nowhere`)).status).toBe(401);
    expect(await agent.call('GET', '/nowhere')).toEqual({ status: 404, body: { code: 'not_found', message: '/nowhere' } });
  });

  it('sends its roster in the configured parts, each listing its own machines, with what the probes found', async () => {
    await until(
      () => controller.calls.filter((c) => c.path === '/site/v1/heartbeats' && c.body.machines.some((m: any) => m.alerts)).length >= 4,
      'beats with alerts',
    );
    const beats = controller.calls.filter((c) => c.path === '/site/v1/heartbeats').slice(-4);
    expect(beats.map((b) => b.body.part.count)).toEqual([4, 4, 4, 4]);
    for (const beat of beats) for (const m of beat.body.machines) expect(inRosterPart(m.id, beat.body.part)).toBe(true);
    expect(beats.flatMap((b) => b.body.machines.map((m: any) => m.id)).sort()).toEqual(MACHINES);
    const alerted = beats.flatMap((b) => b.body.machines).find((m: any) => m.id === 'h100-r1-02');
    expect(alerted.alerts).toEqual([{ id: 'nic', message: 'eth1 down', classifications: ['PreventAllocations'] }]);
  });

  it('creates once per clientToken: a retry under another name is the same instance, a name taken by another is 409', async () => {
    const create = { name: 'job-a', machineId: 'h100-r1-01', instanceId: 'i-a', clientToken: 'tok-a' };
    expect(await agent.call('POST', '/instances', create)).toEqual({ status: 201, body: { name: 'job-a', machineId: 'h100-r1-01' } });
    expect(await agent.call('POST', '/instances', { ...create, name: 'job-a-r2' })).toEqual({
      status: 201,
      body: { name: 'job-a-r2', machineId: 'h100-r1-01' },
    });
    expect(hookLines().filter((l) => l.startsWith('provision'))).toEqual(['provision h100-r1-01 job-a tok-a']);
    const other = await agent.call('POST', '/instances', { ...create, clientToken: 'tok-b', machineId: 'h100-r1-03' });
    expect(other).toEqual({ status: 409, body: { code: 'name_conflict', message: 'an instance named job-a exists' } });
    expect((await agent.call('POST', '/instances', { ...create, name: 'job-x', clientToken: 'tok-x' })).body.code).toBe('machine_busy');
    expect(await agent.call('GET', '/instances/job-a-r2')).toEqual({ status: 200, body: { state: 'present' } });
    expect((await agent.call('POST', '/instances', { name: 'bad' })).status).toBe(400);
  });

  it('power goes to the BMC and is answered once the BMC took it', async () => {
    const before = bmc.resets.length;
    expect(await agent.call('POST', '/instances/job-a/power', { action: 'off' })).toEqual({ status: 202, body: { action: 'off' } });
    expect(await agent.call('POST', '/instances/job-a/power', { action: 'cycle' })).toEqual({ status: 202, body: { action: 'cycle' } });
    expect(bmc.resets.slice(before).map((r) => r.resetType)).toEqual(['ForceOff', 'On']);
    expect((await agent.call('POST', '/instances/nobody/power', { action: 'on' })).status).toBe(404);
    const refused = { name: 'job-6', machineId: 'h100-r1-06', instanceId: 'i-6', clientToken: 'tok-6' };
    expect((await agent.call('POST', '/instances', refused)).status).toBe(201);
    const failed = await agent.call('POST', '/instances/job-6/power', { action: 'cycle' });
    expect(failed).toEqual({
      status: 502,
      body: { code: 'bmc_error', message: `BMC ${bmc.url}: log-in refused: 401 Invalid username or password` },
    });
  });

  it('a delete is 202, runs the cleanup hook and reports its outcome with the hook’s last lines', async () => {
    expect(await agent.call('DELETE', '/instances/job-a')).toEqual({ status: 202, body: { name: 'job-a', machineId: 'h100-r1-01' } });
    expect((await agent.call('DELETE', '/instances/job-a-r2')).status).toBe(202);
    await until(() => controller.calls.some((c) => c.path === '/site/v1/machines/h100-r1-01/cleanup'), 'cleanup report');
    const report = controller.calls.filter((c) => c.path === '/site/v1/machines/h100-r1-01/cleanup');
    expect(report).toEqual([{ path: '/site/v1/machines/h100-r1-01/cleanup', body: { ok: true, message: 'wiped\ndisks clean' } }]);
    expect(hookLines().filter((l) => l.startsWith('cleanup'))).toEqual(['cleanup h100-r1-01 job-a-r2 tok-a']);
    expect((await agent.call('GET', '/instances/job-a')).status).toBe(404);
  });

  it('a key rotation: SIGHUP reads the keys file again, and both keys are accepted while it lasts', async () => {
    const next = { id: 'k2', secret: 'fedcba9876543210fedcba9876543210-rotated' };
    expect((await agent.call('GET', '/instances/job-a', undefined, next)).status).toBe(401);
    writeFileSync(join(dir, 'keys.json'), JSON.stringify({ keys: [TEST_KEY, next], current: next.id }));
    agent.signal('SIGHUP');
    await agent.logged(/signing keys read again: k1, k2/);
    expect((await agent.call('GET', '/instances/job-a', undefined, next)).status).toBe(404);
    expect((await agent.call('GET', '/instances/job-a')).status).toBe(404);
  });

  it('validation reports each test the hook printed; maintenance its outcome', async () => {
    const validation = { validationId: 'val-1', suite: 'return-to-service', reason: 'repair' };
    expect(await agent.call('POST', '/machines/h100-r1-04/validation', validation)).toEqual({ status: 202, body: { validationId: 'val-1' } });
    expect((await agent.call('POST', '/machines/h100-r1-04/validation', validation)).status).toBe(202);
    expect(await agent.call('POST', '/machines/h100-r1-05/maintenance', { maintenanceId: 'mnt-1', category: 'firmware' })).toEqual({
      status: 202,
      body: { machineId: 'h100-r1-05', maintenanceId: 'mnt-1' },
    });
    await until(
      () => controller.calls.some((c) => c.path.endsWith('/h100-r1-04/validation')) && controller.calls.some((c) => c.path.endsWith('/maintenance')),
      'reports',
    );
    expect(controller.calls.find((c) => c.path.endsWith('/h100-r1-04/validation'))?.body).toEqual({
      validationId: 'val-1',
      passed: false,
      results: [
        { test: 'dcgm-diag-r1', passed: true },
        { test: 'nccl', passed: false, message: 'busbw 12 GB/s' },
      ],
    });
    expect(controller.calls.find((c) => c.path.endsWith('/maintenance'))?.body).toEqual({
      maintenanceId: 'mnt-1',
      ok: true,
      message: 'firmware 1.2.3 applied',
    });
    // Asked again once its outcome was reported, it is the same validation: answered, not run again.
    expect((await agent.call('POST', '/machines/h100-r1-04/validation', validation)).status).toBe(202);
    expect((await agent.call('POST', '/machines/h100-r1-05/maintenance', { maintenanceId: 'mnt-1', category: 'firmware' })).status).toBe(202);
    expect(hookLines().filter((l) => l.startsWith('validate'))).toEqual(['validate h100-r1-04   val-1']);
  });
});
