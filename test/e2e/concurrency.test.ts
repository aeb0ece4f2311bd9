import type { DynamoDBRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createStreamHandler } from '#handlers/stream.ts';
import { sweep } from '#reconcilers/sweep.ts';
import { expectProblem, startTestSite, testConfig, type TestSite } from '#test/support/local-site.ts';
import { waitForFleet } from '#test/support/repair-steps.ts';
import { streamRecords } from '#test/support/stream-records.ts';

// DESIGN.md principles 1 and 2 under contention: a lost race is a clean 409 (never a double assignment), an
// Idempotency-Key replay has no further effect, and neither a duplicated stream record nor a sweep racing the
// stream ever makes a second site-agent create.

const gb200Count = 10;
const h100Count = 10;
const config = testConfig(`
[instance_create_retry]
base_delay_ms = 10
timeout_ms = 2000
[simulator]
machines = [ { type = "gb200", count = ${gb200Count}, racks = 2 }, { type = "h100", count = ${h100Count}, racks = 1 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 20
cleanup_ms = 20
`);

let site: TestSite;
let admin: string;
const tenants: Record<string, string> = {};

// While set, the stream handles nothing until it settles: a test holds the stream's reactions back with it.
let streamHeld: Promise<void> | undefined;

beforeAll(async () => {
  site = await startTestSite({
    config,
    aroundStreamHandler: (handle) => async (event) => {
      await streamHeld;
      return handle(event);
    },
  });
  admin = await site.token('provider', ['provider-admin']);
  for (const org of ['acme', 'globex']) tenants[org] = await site.token(org, ['tenant']);
  await waitForFleet(site, admin, gb200Count + h100Count);
}, 120_000);
afterAll(async () => site?.stop());

const instancePath = (org: string, id = '') => `/v2/org/${org}/nico/instance${id ? `/${id}` : ''}`;

interface SimRequest {
  name: string;
  machineId: string;
  instanceId: string;
  clientToken: string;
  outcome: number | string;
}

async function agentCreates(instanceId: string): Promise<SimRequest[]> {
  const { body } = await site.call('GET', '/_sim/requests');
  return (body.items as SimRequest[]).filter((r) => r.instanceId === instanceId);
}

async function machines(query: string) {
  return (await site.call('GET', `/admin/machines?limit=500&${query}`, { token: admin })).body.items as Array<Record<string, any>>;
}

async function waitForStatus(org: string, id: string, status: string) {
  return site.eventually(async () => {
    const { body } = await site.call('GET', instancePath(org, id), { token: tenants[org] });
    return body.status === status ? body : undefined;
  });
}

/** Every record the table's stream holds for one instance, exactly as the poller hands them to the handler. */
async function streamRecordsOf(instanceId: string): Promise<DynamoDBRecord[]> {
  const records = await streamRecords(inject('dynamoEndpoint'), site.tableNames.table);
  return records.filter((record) => record.dynamodb?.Keys?.pk?.S === `INSTANCE#${instanceId}`);
}

describe('concurrency', () => {
  it(`50 concurrent creates for ${gb200Count} free machines: exactly ${gb200Count} × 201 and 40 × 409 no-capacity, one instance per machine`, async () => {
    const orgs = ['acme', 'globex'];
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) => {
        const org = orgs[i % 2]!;
        return site.call('POST', instancePath(org), { token: tenants[org], body: { machineType: 'gb200', name: `race-${i}` } }).then((r) => ({ ...r, org }));
      }),
    );
    const created = responses.filter((r) => r.status === 201);
    const refused = responses.filter((r) => r.status !== 201);
    expect(responses.map((r) => r.status).sort()).toEqual([...Array(gb200Count).fill(201), ...Array(50 - gb200Count).fill(409)]);
    for (const r of refused) expectProblem(r, 409, 'no-capacity');

    const instances = created.map((r) => ({ id: r.body.id as string, machineId: r.body.machineId as string, org: r.org }));
    expect(new Set(instances.map((i) => i.id)).size).toBe(gb200Count);
    expect(new Set(instances.map((i) => i.machineId)).size).toBe(gb200Count);

    // The machines' side: every gb200 machine holds exactly one of these instances, and that instance names it.
    const fleet = await machines('machineType=gb200');
    expect(fleet).toHaveLength(gb200Count);
    const byId = new Map(instances.map((i) => [i.id, i]));
    expect(new Set(fleet.map((m) => m.instanceId)).size).toBe(gb200Count);
    for (const machine of fleet) {
      expect(machine.state).toBe('Assigned');
      expect(byId.get(machine.instanceId)?.machineId, `machine ${machine.id} holds ${machine.instanceId}`).toBe(machine.id);
    }
    // "Ever": each machine's history shows exactly one assignment, so no instance was placed and then displaced.
    for (const machine of fleet) {
      const history = (await site.call('GET', `/admin/machines/${machine.id}/history?limit=500`, { token: admin })).body.items as Array<{
        action: string;
        instanceId?: string;
      }>;
      expect(history.filter((h) => h.action === 'instance-created').map((h) => h.instanceId)).toEqual([machine.instanceId]);
    }
    // And each instance, read as its tenant, is on the machine that names it; the agent was asked once for each.
    for (const instance of instances) {
      const ready = await waitForStatus(instance.org, instance.id, 'Ready');
      expect(ready.machineId).toBe(instance.machineId);
      expect(ready.createAttempts).toBe(1);
      expect(await agentCreates(instance.id)).toHaveLength(1);
    }
    // 50 contended placements cost a few seconds on an idle machine and several times that on a loaded CI box.
  }, 90_000);

  it('an Idempotency-Key replay returns the same instance and assigns nothing more; another body with the key is 422', async () => {
    const assigned = async () => {
      await site.indexesCaughtUp();
      return (await machines('state=Assigned')).length;
    };
    const before = await assigned();
    const key = 'create-idem-1';
    const body = { machineType: 'h100', name: 'idem-one' };
    const first = await site.call('POST', instancePath('acme'), { token: tenants.acme, body, headers: { 'idempotency-key': key } });
    expect(first.status).toBe(201);
    expect(await assigned()).toBe(before + 1);

    for (let i = 0; i < 3; i++) {
      const replay = await site.call('POST', instancePath('acme'), { token: tenants.acme, body, headers: { 'idempotency-key': key } });
      expect(replay.status).toBe(201);
      expect(replay.body).toEqual(first.body);
    }
    expect(await assigned()).toBe(before + 1);

    const reused = await site.call('POST', instancePath('acme'), {
      token: tenants.acme,
      body: { ...body, name: 'idem-two' },
      headers: { 'idempotency-key': key },
    });
    expectProblem(reused, 422, 'idempotency-key-reused');
    expect(await assigned()).toBe(before + 1);

    await site.indexesCaughtUp();
    const listed = (await site.call('GET', `${instancePath('acme')}?limit=500`, { token: tenants.acme })).body.items as Array<{ id: string; name: string }>;
    expect(listed.filter((i) => i.name === 'idem-one' || i.name === 'idem-two').map((i) => i.id)).toEqual([first.body.id]);
    await waitForStatus('acme', first.body.id, 'Ready');
    expect(await agentCreates(first.body.id)).toHaveLength(1);
  });

  it('concurrent requests with one Idempotency-Key create one instance: the others replay it or are told it is in progress', async () => {
    const assigned = async () => {
      await site.indexesCaughtUp();
      return (await machines('state=Assigned')).length;
    };
    const before = await assigned();
    const body = { machineType: 'h100', name: 'idem-burst' };
    const responses = await Promise.all(
      Array.from({ length: 8 }, () =>
        site.call('POST', instancePath('acme'), { token: tenants.acme, body, headers: { 'idempotency-key': 'create-idem-burst' } }),
      ),
    );
    const ok = responses.filter((r) => r.status === 201);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    for (const r of responses.filter((r) => r.status !== 201)) expectProblem(r, 409, 'idempotency-in-progress');
    expect(new Set(ok.map((r) => r.body.id)).size).toBe(1);
    expect(await assigned()).toBe(before + 1);
    await waitForStatus('acme', ok[0]!.body.id, 'Ready');
    expect(await agentCreates(ok[0]!.body.id)).toHaveLength(1);
  });

  it('duplicated stream records, delivered concurrently and after Ready, make no second site-agent create', async () => {
    const handler = createStreamHandler(site.ctx);
    const created = await site.call('POST', instancePath('acme'), { token: tenants.acme, body: { machineType: 'h100', name: 'dup-stream' } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;

    // While Provisioning: the INSERT the poller is delivering right now, delivered five more times at once.
    const inserted = await site.eventually(async () => {
      const records = await streamRecordsOf(id);
      return records.some((r) => r.eventName === 'INSERT') ? records : undefined;
    });
    const racing = await Promise.all(Array.from({ length: 5 }, () => handler({ Records: structuredClone(inserted) })));
    for (const result of racing) expect(result.batchItemFailures).toEqual([]);

    const ready = await waitForStatus('acme', id, 'Ready');
    await site.streamIdle();
    // After Ready: every record of its life so far (INSERT and the MODIFYs), again, concurrently and one by one.
    const all = await streamRecordsOf(id);
    expect(all.map((r) => r.eventName)).toContain('MODIFY');
    const again = await Promise.all(Array.from({ length: 5 }, () => handler({ Records: structuredClone(all) })));
    for (let i = 0; i < 3; i++) again.push(await handler({ Records: structuredClone(all) }));
    for (const result of again) expect(result.batchItemFailures).toEqual([]);
    await site.streamIdle();

    const requests = await agentCreates(id);
    expect(requests.map((r) => [r.name, r.outcome])).toEqual([['dup-stream', 201]]);
    const after = (await site.call('GET', instancePath('acme', id), { token: tenants.acme })).body;
    expect(after).toMatchObject({ status: 'Ready', createAttempts: 1, siteName: 'dup-stream', machineId: ready.machineId });
  });

  it('sweeps racing the stream while instances are created make exactly one agent create per instance', async () => {
    // The stream's reactions wait until a sweep has found work due, so the sweeps certainly take part in the race.
    let sweepFoundDue!: () => void;
    streamHeld = new Promise((resolve) => (sweepFoundDue = resolve));
    let sweeping = true;
    const results: Array<{ due: number; failed: number; skipped?: true }> = [];
    const sweeper = async () => {
      while (sweeping) {
        const result = await sweep(site.ctx);
        results.push(result);
        if (result.due > 0) sweepFoundDue();
        // Another sweeper holds the lease: give the one sweeping (and the stream) the event loop.
        if (result.skipped) await new Promise((resolve) => setTimeout(resolve, 5));
      }
    };
    const siteSweepsBefore = site.counters().sweeps.completed;
    const sweepers = Array.from({ length: 4 }, sweeper);

    const responses = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        site.call('POST', instancePath('globex'), { token: tenants.globex, body: { machineType: 'h100', name: `swept-${i}` } }),
      ),
    );
    try {
      for (const r of responses) expect(r.status, JSON.stringify(r.body)).toBe(201);
      for (const r of responses) await waitForStatus('globex', r.body.id, 'Ready');
    } finally {
      sweeping = false;
      sweepFoundDue();
      streamHeld = undefined;
      await Promise.all(sweepers);
    }
    await site.streamIdle();

    expect(results.length).toBeGreaterThan(4);
    expect(results.filter((r) => r.failed > 0)).toEqual([]);
    // Sweeps did the work while the stream was held: these sweepers found the new instances due (pending), or the
    // site's own timer, which also takes the lease, swept them first.
    expect(results.some((r) => r.due > 0) || site.counters().sweeps.completed > siteSweepsBefore).toBe(true);
    // And they never swept at once: the lease turned the overlapping runs away.
    expect(results.some((r) => r.skipped)).toBe(true);
    for (const r of responses) {
      const requests = await agentCreates(r.body.id);
      expect(requests.map((q) => [q.name, q.outcome])).toEqual([[r.body.name, 201]]);
      const instance = (await site.call('GET', instancePath('globex', r.body.id), { token: tenants.globex })).body;
      expect(instance).toMatchObject({ status: 'Ready', createAttempts: 1 });
    }
  });
});
