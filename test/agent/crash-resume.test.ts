// Nothing lost across restarts: the real daemon SIGKILLed in the middle of a create, a cleanup and a report, then
// started again on the same journal. What it accepted is finished or reported, once.

import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgentProcess, writeAgentConfig, type AgentProcess } from './support/agent-process.ts';
import { startRecordingController, type RecordingController } from './support/recording-controller.ts';
import { startRedfishMockup, type RedfishMockup } from './support/redfish-mockup-server.ts';

/** The processes still running a hook whose key ends with `key` (every hook carries FLEETWARD_HOOK_KEY). */
function hooksRunning(key: string): string[] {
  return readdirSync('/proc').filter((pid) => {
    try {
      return (
        /^\d+$/.test(pid) &&
        readFileSync(`/proc/${pid}/environ`, 'utf8')
          .split('\0')
          .some((v) => v.startsWith('FLEETWARD_HOOK_KEY=') && v.endsWith(key))
      );
    } catch {
      return false;
    }
  });
}

const until = async (check: () => boolean, what: string, ms = 10_000) => {
  for (const start = Date.now(); !check(); ) {
    if (Date.now() - start > ms) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

describe('the reference agent after a SIGKILL', () => {
  let controller: RecordingController;
  let bmc: RedfishMockup;
  let dir: string;
  let config: string;
  let agent: AgentProcess | undefined;
  const hookLog = () => join(dir, 'hooks.log');
  const hookSeconds = () => join(dir, 'hook-seconds');
  const hooksTake = (seconds: number) => writeFileSync(hookSeconds(), String(seconds));
  const lines = () => (existsSync(hookLog()) ? readFileSync(hookLog(), 'utf8').trim().split('\n') : []);

  beforeAll(async () => {
    controller = await startRecordingController();
    bmc = await startRedfishMockup({ dir: join(import.meta.dirname, 'fixtures', 'redfish-mockup'), user: 'root', password: 'calvin' });
    process.env.AGENT_TEST_REDFISH_PASSWORD = 'calvin';
    dir = mkdtempSync(join(tmpdir(), 'agent-crash-'));
    // Each hook says when it starts and ends, and whether it resumes a run a crash cut short; it takes as long as the
    // test says: long enough, before a crash, that the orphan cannot finish before the restarted agent looks for it.
    // It reads how long before it says it started, so a test that sees the start may set the next hook's time at once.
    const say = (name: string, when: string) => `echo "${name} ${when} $FLEETWARD_INSTANCE_NAME resumed=$FLEETWARD_RESUMED" >> ${join(dir, 'hooks.log')}`;
    const hook = (name: string) =>
      `{ command = 'seconds=$(cat ${hookSeconds()}); ${say(name, 'start')}; sleep $seconds; ${say(name, 'end')}', timeout_seconds = 20 }`;
    hooksTake(0.2);
    config = writeAgentConfig(dir, {
      controllerUrl: controller.url,
      token: controller.token,
      machines: ['m-01', 'm-02'].map((id) => ({
        id,
        bmc: `{ driver = "redfish", url = "${bmc.url}", user = "root", password = { env = "AGENT_TEST_REDFISH_PASSWORD" } }`,
      })),
      hooks: `provision = ${hook('provision')}\ncleanup = ${hook('cleanup')}`,
    });
  });
  afterAll(async () => {
    await agent?.kill();
    await controller?.stop();
    await bmc?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('mid-create: the provisioning resumes (the orphaned hook ended), and the retried create is that instance, not a second', async () => {
    agent = await startAgentProcess(config);
    hooksTake(8);
    const create = { name: 'job-1', machineId: 'm-01', instanceId: 'i-1', clientToken: 'tok-1' };
    const lost = agent.call('POST', '/instances', create).catch((error: Error) => error);
    await until(() => lines().includes('provision start job-1 resumed=0'), 'the provision hook starts');
    await agent.kill();
    expect(await lost).toBeInstanceOf(Error);
    hooksTake(0.2);

    agent = await startAgentProcess(config);
    // The controller's create-retry rule: attempt 2 under `<name>-r2`, the same clientToken.
    expect(await agent.call('POST', '/instances', { ...create, name: 'job-1-r2' })).toEqual({ status: 201, body: { name: 'job-1-r2', machineId: 'm-01' } });
    await agent.logged(/ended a \S+#tok-1 hook left running before the restart/);
    expect(hooksRunning('#tok-1')).toEqual([]);
    expect(lines()).toEqual(['provision start job-1 resumed=0', 'provision start job-1 resumed=1', 'provision end job-1 resumed=1']);
    expect(await agent.call('GET', '/instances/job-1')).toEqual({ status: 200, body: { state: 'present' } });
  });

  it('mid-cleanup: the cleanup resumes after the restart and is reported once', async () => {
    hooksTake(8);
    expect((await agent!.call('DELETE', '/instances/job-1-r2')).status).toBe(202);
    await until(() => lines().includes('cleanup start job-1-r2 resumed=0'), 'the cleanup hook starts');
    await agent!.kill();
    hooksTake(0.2);
    agent = await startAgentProcess(config);
    expect(await agent.call('GET', '/instances/job-1')).toEqual({ status: 200, body: { state: 'cleaning' } });
    await until(() => controller.calls.some((c) => c.path === '/site/v1/machines/m-01/cleanup'), 'the cleanup report');
    await agent.logged(/ended a \S+#cleanup:tok-1 hook left running before the restart/);
    expect(hooksRunning('#cleanup:tok-1')).toEqual([]);
    expect(lines().filter((l) => l.startsWith('cleanup'))).toEqual([
      'cleanup start job-1-r2 resumed=0',
      'cleanup start job-1-r2 resumed=1',
      'cleanup end job-1-r2 resumed=1',
    ]);
    expect(controller.calls.filter((c) => c.path.endsWith('/cleanup'))).toEqual([
      { path: '/site/v1/machines/m-01/cleanup', body: { ok: true, message: 'cleanup hook succeeded' } },
    ]);
    expect((await agent.call('GET', '/instances/job-1')).status).toBe(404);
  });

  it('a report the controller had not taken before the crash is sent after the restart', async () => {
    controller.answerWith(503, /cleanup/);
    expect((await agent!.call('POST', '/instances', { name: 'job-2', machineId: 'm-02', instanceId: 'i-2', clientToken: 'tok-2' })).status).toBe(201);
    expect((await agent!.call('DELETE', '/instances/job-2')).status).toBe(202);
    await agent!.logged(/cleanup report for m-02 answered 503/);
    await agent!.kill();
    controller.answerWith(200);
    agent = await startAgentProcess(config);
    await until(() => controller.calls.some((c) => c.path === '/site/v1/machines/m-02/cleanup'), 'the owed report');
    expect(lines().filter((l) => l.startsWith('cleanup') && l.includes('job-2'))).toEqual(['cleanup start job-2 resumed=0', 'cleanup end job-2 resumed=0']);
  });

  it('mid-power: a cycle that may have reached the BMC is not sent again, and the controller’s retry of it is answered by it', async () => {
    expect((await agent!.call('POST', '/instances', { name: 'job-3', machineId: 'm-02', instanceId: 'i-3', clientToken: 'tok-3' })).status).toBe(201);
    await agent!.kill();
    // The crash's window is the BMC call itself (milliseconds): the journal is left as it would be, the cycle
    // accepted and sent, its outcome unknown.
    const at = new Date().toISOString();
    appendFileSync(join(dir, 'journal.jsonl'), `${JSON.stringify({ t: 'power', id: 'p-1', clientToken: 'tok-3', machineId: 'm-02', action: 'cycle', at })}\n`);
    appendFileSync(join(dir, 'journal.jsonl'), `${JSON.stringify({ t: 'power-sent', id: 'p-1', at })}\n`);
    const resetsBefore = bmc.resets.length;
    agent = await startAgentProcess(config);
    await agent.logged(/power cycle of m-02: done/);
    expect(bmc.resets.length).toBe(resetsBefore);
    expect(await agent.call('POST', '/instances/job-3/power', { action: 'cycle' })).toEqual({ status: 202, body: { action: 'cycle' } });
    expect(bmc.resets.length).toBe(resetsBefore);
    // A new cycle after that is a new one.
    expect((await agent.call('POST', '/instances/job-3/power', { action: 'cycle' })).status).toBe(202);
    expect(bmc.resets.slice(resetsBefore).map((r) => r.resetType)).toEqual(['ForceRestart']);
  });
});
