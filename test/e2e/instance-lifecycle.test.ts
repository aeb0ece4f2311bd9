import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSite, type TestSite } from '#test/support/local-site.ts';

let site: TestSite;
let tenant: string;
let admin: string;

beforeAll(async () => {
  site = await startTestSite();
  tenant = await site.token('acme', ['tenant']);
  admin = await site.token('provider', ['provider-admin']);
  // The demo fleet is registered; wait for the first roster so machines count as heartbeating.
  await site.eventually(async () => {
    const { body } = await site.call('GET', '/admin/machines?allocatable=true', { token: admin });
    return body.items.length === 6;
  });
});
afterAll(async () => site?.stop());

const instancePath = (id = '') => `/v2/org/acme/nico/instance${id ? `/${id}` : ''}`;

async function waitForStatus(id: string, status: string) {
  return site.eventually(async () => {
    const { body } = await site.call('GET', instancePath(id), { token: tenant });
    return body.status === status ? body : undefined;
  });
}

async function machine(id: string) {
  return (await site.call('GET', `/admin/machines/${id}`, { token: admin })).body;
}

describe('instance lifecycle through the site agent', () => {
  it("runs with a signing key of its own: the agent takes the controller's signed calls and refuses unsigned ones", async () => {
    const { body } = await site.call('GET', '/_sim/keys');
    expect(body).toEqual({ keys: [{ id: expect.stringMatching(/^local-[0-9a-f]{8}$/) }] });
    const unsigned = await fetch(`${site.simulator.url}/instances/anything`);
    expect(unsigned.status).toBe(401);
    expect(await unsigned.json()).toEqual({ error: 'unauthorized' });
  });

  it('creates on an allocatable machine, becomes Ready, and on release goes back to the pool through cleanup', async () => {
    const created = await site.call('POST', instancePath(), { token: tenant, body: { machineType: 'gb200', name: 'life-1' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ org: 'acme', machineType: 'gb200', status: 'Provisioning', name: 'life-1' });
    const machineId = created.body.machineId;
    expect(await machine(machineId)).toMatchObject({ state: 'Assigned', instanceId: created.body.id, allocatable: false });

    const ready = await waitForStatus(created.body.id, 'Ready');
    expect(ready).toMatchObject({ createAttempts: 1, siteName: 'life-1' });

    const released = await site.call('DELETE', instancePath(created.body.id), { token: tenant });
    expect(released.status).toBe(202);
    expect(released.body.status).toBe('Terminating');

    await waitForStatus(created.body.id, 'Terminated');
    const back = await site.eventually(async () => {
      const m = await machine(machineId);
      return m.state === 'Ready' ? m : undefined;
    });
    expect(back).toMatchObject({ allocatable: true, notAllocatableReasons: [] });
    expect(back.instanceId).toBeUndefined();

    // The stream adds entries of its own (an event's delivery) a little later: read once it has settled.
    await site.afterNextSweep();
    const history = (await site.call('GET', `/admin/machines/${machineId}/history`, { token: admin })).body;
    const actions = history.items.map((h: { action: string }) => h.action);
    expect(actions).toEqual(expect.arrayContaining(['instance-created', 'instance-ready', 'instance-released', 'cleanup-succeeded']));
    // The oldest entry is read from the machine's record, after the stored ones, on whichever page has room.
    expect(actions.at(-1)).toBe('machine-registered');
    const paged: string[] = [];
    for (let token: string | undefined, page = 0; page === 0 || token; page++) {
      const query = token ? `?limit=2&nextToken=${encodeURIComponent(token)}` : '?limit=2';
      const body = (await site.call('GET', `/admin/machines/${machineId}/history${query}`, { token: admin })).body;
      expect(body.items.length).toBeLessThanOrEqual(2);
      paged.push(...body.items.map((h: { action: string }) => h.action));
      token = body.nextToken;
    }
    expect(paged).toEqual(actions);
  });

  it('releasing an instance that is already terminating answers 200 and changes nothing', async () => {
    const created = await site.call('POST', instancePath(), { token: tenant, body: { machineType: 'h100' } });
    await waitForStatus(created.body.id, 'Ready');
    expect((await site.call('DELETE', instancePath(created.body.id), { token: tenant })).status).toBe(202);
    const again = await site.call('DELETE', instancePath(created.body.id), { token: tenant });
    expect(again.status).toBe(200);
    expect(['Terminating', 'Terminated']).toContain(again.body.status);
    await waitForStatus(created.body.id, 'Terminated');
  });

  it('retries a 500 under a -r2 name and records the attempts', async () => {
    await site.call('POST', '/_sim/faults', { body: { op: 'create', outcomes: [500] } });
    const created = await site.call('POST', instancePath(), { token: tenant, body: { machineType: 'gb200', name: 'retry-500' } });
    const ready = await waitForStatus(created.body.id, 'Ready');
    expect(ready).toMatchObject({ createAttempts: 2, siteName: 'retry-500-r2' });
    const requests = (await site.call('GET', '/_sim/requests')).body.items.filter((r: { instanceId: string }) => r.instanceId === created.body.id);
    expect(requests.map((r: { name: string; outcome: unknown }) => [r.name, r.outcome])).toEqual([
      ['retry-500', 500],
      ['retry-500-r2', 201],
    ]);
    expect(new Set(requests.map((r: { clientToken: string }) => r.clientToken)).size).toBe(1);
    await site.call('DELETE', instancePath(created.body.id), { token: tenant });
    await waitForStatus(created.body.id, 'Terminated');
  });

  it('does not retry a 502: the instance fails with a reason and its machine returns to the pool', async () => {
    await site.call('POST', '/_sim/faults', { body: { op: 'create', outcomes: [502] } });
    const created = await site.call('POST', instancePath(), { token: tenant, body: { machineType: 'gb200', name: 'fail-502' } });
    const failed = await waitForStatus(created.body.id, 'Failed');
    expect(failed.createAttempts).toBe(1);
    expect(failed.failureReason).toMatch(/502/);
    await site.eventually(async () => (await machine(created.body.machineId)).state === 'Ready');
  });

  it('answers 409 no-capacity when every machine of the type is taken, and 422 for an unknown type', async () => {
    // An h100 was released above: a create reads the allocatable index, which may show its release a moment late.
    await site.indexesCaughtUp();
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const created = await site.call('POST', instancePath(), { token: tenant, body: { machineType: 'h100' } });
      expect(created.status).toBe(201);
      ids.push(created.body.id);
    }
    const full = await site.call('POST', instancePath(), { token: tenant, body: { machineType: 'h100' } });
    expect(full.status).toBe(409);
    expect(full.headers.get('content-type')).toContain('application/problem+json');
    expect(full.body.code).toBe('no-capacity');
    const unknown = await site.call('POST', instancePath(), { token: tenant, body: { machineType: 'b300' } });
    expect(unknown.status).toBe(422);
    expect(unknown.body.code).toBe('unknown-machine-type');
    for (const id of ids) {
      await waitForStatus(id, 'Ready');
      await site.call('DELETE', instancePath(id), { token: tenant });
    }
    for (const id of ids) await waitForStatus(id, 'Terminated');
  });

  it("hides another org's instances", async () => {
    const created = await site.call('POST', instancePath(), { token: tenant, body: { machineType: 'gb200' } });
    const other = await site.token('globex', ['tenant']);
    expect((await site.call('GET', `/v2/org/globex/nico/instance/${created.body.id}`, { token: other })).status).toBe(404);
    expect((await site.call('DELETE', `/v2/org/globex/nico/instance/${created.body.id}`, { token: other })).status).toBe(404);
    expect((await site.call('GET', instancePath(created.body.id), { token: other })).status).toBe(404);
    await waitForStatus(created.body.id, 'Ready');
    await site.call('DELETE', instancePath(created.body.id), { token: tenant });
    await waitForStatus(created.body.id, 'Terminated');
  });
});
