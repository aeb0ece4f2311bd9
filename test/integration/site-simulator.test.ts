import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultSiteConfig } from '#config/site-config.ts';
import { createSiteAgentClient } from '#site/agent-client.ts';
import { heartbeatBody } from '#site/agent-contract.ts';
import { httpSiteAgent } from '#runtime/site-agent.ts';
import { staticKeys } from '#site/signing-keys.ts';
import { demoFleet } from '#local/site-agent/demo-fleet.ts';
import type { SiteSimulator } from '#local/site-agent/simulator.ts';
import {
  agentClient,
  call,
  calls,
  clearCalls,
  controllerUrl,
  create,
  eventually,
  HEARTBEAT_INTERVAL_MS,
  heartbeats,
  machines,
  onlyK1,
  refused,
  resetRefused,
  rosterIds,
  send,
  setControllerDown,
  setSimUrl,
  sim,
  simulatorWith,
  simUrl,
  useSimulatorHarness,
} from '#test/support/simulator-harness.ts';

// The simulated site agent against a stub controller (test/support/simulator-harness.ts); its signing and the
// controller's agent client against it are in site-simulator-signing.test.ts.
useSimulatorHarness();

describe('demoFleet', () => {
  it('gives stable ids and spreads each group evenly over its own racks', () => {
    const fleet = demoFleet([
      { type: 'gb200', count: 5, racks: 2 },
      { type: 'h100', count: 2, racks: 1 },
    ]);
    expect(fleet).toEqual([
      { id: 'gb200-r1-01', machineType: 'gb200', rack: 'rack-1' },
      { id: 'gb200-r1-02', machineType: 'gb200', rack: 'rack-1' },
      { id: 'gb200-r1-03', machineType: 'gb200', rack: 'rack-1' },
      { id: 'gb200-r2-01', machineType: 'gb200', rack: 'rack-2' },
      { id: 'gb200-r2-02', machineType: 'gb200', rack: 'rack-2' },
      { id: 'h100-r3-01', machineType: 'h100', rack: 'rack-3' },
      { id: 'h100-r3-02', machineType: 'h100', rack: 'rack-3' },
    ]);
    expect(new Set(demoFleet([{ type: 'gb200', count: 16, racks: 2 }]).map((m) => m.id)).size).toBe(16);
  });
});

describe('simulated site agent: listening before it starts', () => {
  it('holds its port and answers the agent API, but beats nothing until started', async () => {
    // Every call the agent makes to the controller asks for its URL first.
    let controllerAsked = 0;
    const early = simulatorWith({
      controllerUrl: () => {
        controllerAsked++;
        return controllerUrl;
      },
    });
    try {
      await early.listen();
      const requests = await fetch(`${early.url}/_sim/requests`);
      expect(await requests.json()).toEqual({ items: [] });
      await new Promise((resolve) => setTimeout(resolve, 3 * HEARTBEAT_INTERVAL_MS));
      expect(controllerAsked).toBe(0);
      expect(early.running()).toBe(false);
      const url = early.url;
      await early.start();
      expect(early.url).toBe(url);
      await eventually(() => (controllerAsked > 0 ? true : undefined));
    } finally {
      await early.stop();
    }
  });
});

describe('simulated site agent: work taken before it starts', () => {
  it('does a validation it accepted while only listening once it starts, and reports it then', async () => {
    const early = simulatorWith({ validationMs: 10 });
    const validations = () => calls.filter((c) => c.path.endsWith('/validation'));
    try {
      await early.listen();
      setSimUrl(early.url);
      const request = { validationId: 'v-early', suite: 'standard', reason: 'registration' };
      expect((await call('POST', '/machines/gb200-r1-01/validation', request)).status).toBe(202);
      await new Promise((resolve) => setTimeout(resolve, 5 * HEARTBEAT_INTERVAL_MS));
      expect(validations()).toEqual([]);
      await early.start();
      const [reported] = await eventually(() => (validations().length > 0 ? validations() : undefined));
      expect(reported).toMatchObject({ path: '/site/v1/machines/gb200-r1-01/validation', body: { validationId: 'v-early', passed: true } });
    } finally {
      await early.stop();
    }
  });
});

describe('simulated site agent: creates', () => {
  it('honours clientToken: a repeated create answers 201 and never creates twice', async () => {
    expect(await create('job', 'tok-a')).toEqual({ status: 201, body: { name: 'job', machineId: 'gb200-r1-01' } });
    expect(await create('job', 'tok-a')).toEqual({ status: 201, body: { name: 'job', machineId: 'gb200-r1-01' } });
    // Same token under a retry name: still the one instance already made.
    expect(await create('job-r2', 'tok-a')).toEqual({ status: 201, body: { name: 'job', machineId: 'gb200-r1-01' } });
    expect((await call('DELETE', '/instances/job-r2')).status).toBe(404);
  });

  it('answers 409 name_conflict for an existing name under another token', async () => {
    await create('job', 'tok-a');
    const conflict = await create('job', 'tok-b');
    expect(conflict.status).toBe(409);
    expect(conflict.body.code).toBe('name_conflict');
    const { body } = await call('GET', '/_sim/requests');
    expect(body.items.map((r: { outcome: unknown; clientToken: string }) => [r.clientToken, r.outcome])).toEqual([
      ['tok-a', 201],
      ['tok-b', 409],
    ]);
    expect(body.items[0]).toMatchObject({ name: 'job', machineId: 'gb200-r1-01', instanceId: 'i-job' });
    expect(Date.parse(body.items[0].at)).not.toBeNaN();
  });

  it('plays queued faults in order, then goes back to success', async () => {
    expect((await call('POST', '/_sim/faults', { op: 'create', outcomes: [503, 502, 409] })).status).toBe(200);
    const statuses = [];
    for (const token of ['t1', 't2', 't3', 't4']) statuses.push((await create(`n-${token}`, token)).status);
    expect(statuses).toEqual([503, 502, 409, 201]);
    // A 503 did not create; a 502 may have: its name is left behind.
    expect((await call('DELETE', '/instances/n-t1')).status).toBe(404);
    expect((await call('DELETE', '/instances/n-t2')).status).toBe(202);
  });

  it('rejects a fault it cannot play with a problem+json 422 naming the field, and queues nothing', async () => {
    const unplayable = await call('POST', '/_sim/faults', { op: 'create', outcomes: [503, 'sometimes'] });
    expect(unplayable.status).toBe(422);
    expect(unplayable.body).toMatchObject({
      code: 'validation-failed',
      errors: [{ path: 'outcomes.1', message: expect.stringContaining('"network", "timeout" or one of') }],
    });
    expect((await call('POST', '/_sim/faults', { op: 'reboot', outcomes: [] })).status).toBe(422);
    expect((await call('POST', '/_sim/faults', { op: 'cleanup', outcomes: ['yes'] })).status).toBe(422);
    expect((await call('GET', '/_sim/faults')).body).toEqual({ create: [], cleanup: [], maintenance: [], power: [] });
    expect((await call('POST', '/_sim/machines/gb200-r1-01/heartbeat', { stopped: 'yes' })).status).toBe(422);
  });

  it('clears the request log', async () => {
    await create('job', 'tok-a');
    expect((await call('DELETE', '/_sim/requests')).status).toBe(204);
    expect((await call('GET', '/_sim/requests')).body).toEqual({ items: [] });
  });
});

describe('simulated site agent: instance status', () => {
  it('answers present, then cleaning until the cleanup is reported, then absent', async () => {
    const { client } = agentClient();
    expect(await client.instanceStatus('job')).toEqual({ ok: true, state: 'absent' });
    await create('job', 'tok-a');
    expect(await client.instanceStatus('job')).toEqual({ ok: true, state: 'present' });

    setControllerDown(true);
    resetRefused();
    expect(await client.deleteInstance('job')).toEqual({ ok: true, status: 202, alreadyGone: false });
    await eventually(() => (refused >= 1 ? true : undefined));
    expect(await client.instanceStatus('job')).toEqual({ ok: true, state: 'cleaning' });
    // The same delete again while cleaning: accepted, and no second cleanup.
    expect(await client.deleteInstance('job')).toEqual({ ok: true, status: 202, alreadyGone: false });

    setControllerDown(false);
    await eventually(async () => {
      const status = await client.instanceStatus('job');
      return status.ok && status.state === 'absent' ? true : undefined;
    });
    expect(calls.filter((c) => c.path.endsWith('/cleanup'))).toHaveLength(1);
  });

  it("is what the reconcilers' agent (httpSiteAgent) reports: present, cleaning, absent, or an error", async () => {
    const agent = httpSiteAgent(simUrl, defaultSiteConfig(), staticKeys(onlyK1));
    await create('job', 'tok-a');
    expect(await agent.status('job')).toEqual({ kind: 'present' });
    setControllerDown(true);
    await agent.delete('job');
    expect(await agent.status('job')).toEqual({ kind: 'cleaning' });
    expect(await agent.status('never-made')).toEqual({ kind: 'absent' });
    const unreachable = httpSiteAgent('http://127.0.0.1:9', defaultSiteConfig(), staticKeys(onlyK1));
    expect(await unreachable.status('job')).toEqual({ kind: 'error', reason: expect.stringContaining('status query') });
  });

  it('rejects a create that breaks the contract, naming the field', async () => {
    const answer = await call('POST', '/instances', { name: 'job', machineId: 'gb200-r1-01', instanceId: 'i-1' });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 'bad_request', message: expect.stringContaining('clientToken') });
  });

  it('answers 400 to a body that is not JSON', async () => {
    const answer = await send('POST', '/instances', { body: '{"name":' });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 'invalid-json' });
  });
});

describe('simulated site agent: state kept in a file', () => {
  const started: SiteSimulator[] = [];
  afterEach(async () => {
    for (const agent of started.splice(0)) await agent.stop();
  });

  async function agentOn(stateFile: string) {
    const agent = simulatorWith({ provisionMs: 0, cleanupMs: 60_000, stateFile });
    started.push(agent);
    await agent.start();
    return createSiteAgentClient({ baseUrl: agent.url, maxAttempts: 1, baseDelayMs: 0, timeoutMs: 2_000, keys: staticKeys(onlyK1) });
  }

  it('outlives a restart: instances stay present, a cleanup under way finished meanwhile without a report, a client token still dedupes', async () => {
    const stateFile = join(mkdtempSync(join(tmpdir(), 'fleetward-agent-')), 'site-agent.json');
    const before = await agentOn(stateFile);
    await before.createInstance({ name: 'kept', machineId: 'gb200-r1-01', instanceId: 'i-kept', clientToken: 'tok-kept' });
    await before.createInstance({ name: 'deleted', machineId: 'gb200-r1-02', instanceId: 'i-deleted', clientToken: 'tok-deleted' });
    expect(await before.deleteInstance('deleted')).toMatchObject({ ok: true, alreadyGone: false });
    expect(await before.instanceStatus('deleted')).toEqual({ ok: true, state: 'cleaning' });
    await started[0]!.stop();

    const after = await agentOn(stateFile);
    expect(await after.instanceStatus('kept')).toEqual({ ok: true, state: 'present' });
    expect(await after.instanceStatus('deleted')).toEqual({ ok: true, state: 'absent' });
    const again = await after.createInstance({ name: 'kept', machineId: 'gb200-r1-01', instanceId: 'i-kept', clientToken: 'tok-kept' });
    expect(again).toMatchObject({ ok: true, siteName: 'kept', attempts: 1 });
    expect(calls.filter((c) => c.path.endsWith('/cleanup'))).toEqual([]);
  });

  it('keeps what its health probes report across a restart', async () => {
    const stateFile = join(mkdtempSync(join(tmpdir(), 'fleetward-agent-')), 'site-agent.json');
    await agentOn(stateFile);
    const alerts = [{ id: 'GpuXid79', message: 'GPU 3 fell off the bus', classifications: ['PreventAllocations'] }];
    expect((await started[0]!.control('POST', '/_sim/machines/gb200-r1-02/health', { alerts }))?.status).toBe(200);
    await started[0]!.stop();

    const restarted = simulatorWith({ provisionMs: 0, cleanupMs: 0, stateFile });
    started.push(restarted);
    expect((await restarted.control('GET', '/_sim/machines/gb200-r1-02/health', undefined))?.body).toEqual({ id: 'gb200-r1-02', alerts });
  });
});

describe('simulated site agent: cleanup reports', () => {
  it('reports a queued cleanup failure', async () => {
    await create('job', 'tok-a');
    await call('POST', '/_sim/faults', { op: 'cleanup', outcomes: [false] });
    expect((await call('DELETE', '/instances/job')).status).toBe(202);
    const report = await eventually(() => calls.find((c) => c.path.endsWith('/cleanup')));
    expect(report.body).toEqual({ ok: false, message: 'simulated cleanup failure' });
  });

  it('retries the report while the controller is unavailable', async () => {
    await create('job', 'tok-a');
    setControllerDown(true);
    resetRefused();
    await call('DELETE', '/instances/job');
    await eventually(() => (refused >= 2 ? true : undefined));
    setControllerDown(false);
    const report = await eventually(() => calls.find((c) => c.path.endsWith('/cleanup')));
    expect(report.body).toEqual({ ok: true });
  });
});

describe('simulated site agent: heartbeats', () => {
  it('sends the whole roster at once, with the bearer token', async () => {
    const first = await eventually(() => heartbeats()[0]);
    expect(first.authorization).toBe('Bearer agent-token');
    expect(rosterIds(first)).toEqual(machines.map((m) => m.id));
    await eventually(() => (heartbeats().length >= 3 ? true : undefined));
  });

  it('leaves out a stopped machine and brings it back on resume', async () => {
    const stopped = machines[1]!.id;
    expect(await call('POST', `/_sim/machines/${stopped}/heartbeat`, { stopped: true })).toEqual({
      status: 200,
      body: { id: stopped, stopped: true },
    });
    clearCalls();
    const without = await eventually(() => heartbeats()[1]);
    expect(rosterIds(without)).toEqual(machines.map((m) => m.id).filter((id) => id !== stopped));

    await call('POST', `/_sim/machines/${stopped}/heartbeat`, { stopped: false });
    clearCalls();
    const back = await eventually(() => heartbeats()[1]);
    expect(rosterIds(back)).toEqual(machines.map((m) => m.id));
  });

  it('404s an unknown machine', async () => {
    expect((await call('POST', '/_sim/machines/nope/heartbeat', { stopped: true })).status).toBe(404);
    expect((await call('POST', '/_sim/machines/nope/health', { alerts: [] })).status).toBe(404);
  });

  it("carries a machine's health alerts in every beat until they are cleared", async () => {
    const alerting = machines[2]!.id;
    const alerts = [{ id: 'GpuXid79', message: 'GPU 3 fell off the bus', classifications: ['PreventAllocations'] }];
    expect(await call('POST', `/_sim/machines/${alerting}/health`, { alerts })).toEqual({ status: 200, body: { id: alerting, alerts } });
    clearCalls();
    const reported = await eventually(() => heartbeats()[1]);
    expect(reported.body.machines.filter((m: { alerts?: unknown }) => m.alerts)).toEqual([{ id: alerting, alerts }]);
    expect(heartbeatBody.parse(reported.body)).toEqual(reported.body);

    await call('POST', `/_sim/machines/${alerting}/health`, { alerts: [] });
    clearCalls();
    const cleared = await eventually(() => heartbeats()[1]);
    expect(cleared.body.machines.every((m: { alerts?: unknown }) => m.alerts === undefined)).toBe(true);
  });

  it('refuses alerts the agent contract does not allow with a 422 problem document', async () => {
    const response = await fetch(`${simUrl}/_sim/machines/${machines[0]!.id}/health`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ alerts: [{ id: '', message: 'x', classifications: ['Sometimes'] }] }),
    });
    expect(response.status).toBe(422);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    const problem = await response.json();
    expect(problem).toMatchObject({ status: 422, code: 'validation-failed' });
    expect(problem.errors.map((e: { path: string }) => e.path).sort()).toEqual(['alerts.0.classifications.0', 'alerts.0.id']);
  });

  it('stops heartbeating when stopped: nothing is left that could send one', async () => {
    await eventually(() => heartbeats()[0]);
    await sim.stop();
    expect(sim.running()).toBe(false);
    // No timer that could fire (the next beat, a provisioning or cleanup delay, a report's retry), no call in flight.
    expect(sim.counters()).toMatchObject({ timersPending: 0, callsInFlight: 0 });
  });
});
