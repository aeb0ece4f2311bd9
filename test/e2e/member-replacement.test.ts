import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, testConfig, type TestSite } from '#test/support/local-site.ts';
import { instanceStatus, machine, readySite, sources, type Actors } from '#test/support/repair-steps.ts';

// Replacing a meta-instance member (docs/api.md "Replacing a member") on a local site whose safety rules are watched
// while it runs: make-before-break when a machine is free (the successor Ready before the outgoing member is released),
// at once when none is, the old machine quarantined when the tenant reported an issue, and members on machines under
// declared maintenance replaced before the hand-back deadline.

const config = testConfig(`
[instance_create_retry]
base_delay_ms = 10
timeout_ms = 2000
[simulator]
machines = [ { type = "gb200", count = 5, racks = 1 }, { type = "h100", count = 2, racks = 1 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 150
cleanup_ms = 20
[repair_storm]
max_fraction = 1
`);

let site: TestSite;
let who: Actors;
beforeAll(async () => {
  ({ site, who } = await readySite(7, { config, watchInvariants: true }));
});
afterAll(async () => site?.stop());

const meta = async (id: string) => (await site.call('GET', `/v2/org/acme/nico/meta-instance/${id}`, { token: who.tenant })).body;
const instance = async (id: string) => (await site.call('GET', `/v2/org/acme/nico/instance/${id}`, { token: who.tenant })).body;

async function readyGroup(machineType: string, minNodes: number, machineIds?: string[]): Promise<{ id: string; members: string[] }> {
  const created = await site.call('POST', '/v2/org/acme/nico/meta-instance', { token: who.tenant, body: { machineType, minNodes, machineIds } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  // Placed at once when the machines are free; a machine still cleaning up after an earlier test is waited for.
  const placed = await site.eventually(async () => {
    const shown = await meta(created.body.id);
    return shown.instanceIds.length === minNodes ? shown : undefined;
  });
  const members: string[] = placed.instanceIds;
  for (const member of members) await instanceStatus(site, who.tenant, 'acme', member, 'Ready');
  return { id: created.body.id, members };
}

const replace = (metaId: string, body: unknown) => site.call('POST', `/v2/org/acme/nico/meta-instance/${metaId}/replace`, { token: who.tenant, body });

/** When an action was recorded in a machine's history about an instance. */
async function recordedAt(machineId: string, action: string, instanceId: string): Promise<string> {
  const { body } = await site.call('GET', `/admin/machines/${machineId}/history?limit=200`, { token: who.admin });
  const entry = (body.items as Array<{ action: string; instanceId?: string; at: string }>).find((e) => e.action === action && e.instanceId === instanceId);
  expect(entry, `${action} of ${instanceId} on ${machineId}`).toBeDefined();
  return entry!.at;
}

/** The group once its replacements are done: the outgoing member Terminated, `minNodes` Ready members. */
const replaced = (metaId: string, outgoing: string, minNodes: number) =>
  site.eventually(async () => {
    const shown = await meta(metaId);
    if (shown.memberReplacements?.length || shown.instanceIds.includes(outgoing) || shown.instanceIds.length !== minNodes) return undefined;
    const members = await Promise.all(shown.instanceIds.map(instance));
    return members.every((m) => m.status === 'Ready') && (await instance(outgoing)).status === 'Terminated' ? members : undefined;
  }, 20_000);

describe('replacing a meta-instance member', () => {
  it('make-before-break: the successor is Ready before the outgoing member goes, whose machine the issue quarantines', async () => {
    const group = await readyGroup('gb200', 2);
    const outgoing = await instance(group.members[0]!);
    const asked = await replace(group.id, { instanceId: outgoing.id, issue: { category: 'hardware', summary: 'NVLink errors' } });
    expect(asked.status, JSON.stringify(asked.body)).toBe(202);
    expect(asked.body.memberReplacements).toEqual([expect.objectContaining({ instanceId: outgoing.id, reason: 'tenant' })]);
    // The same request again changes nothing.
    expect((await replace(group.id, { instanceId: outgoing.id })).body.memberReplacements).toHaveLength(1);

    const members = await replaced(group.id, outgoing.id, 2);
    const successor = members.find((m) => m.id !== group.members[1])!;
    expect(successor.machineId).not.toBe(outgoing.machineId);
    const successorReady = await recordedAt(successor.machineId, 'instance-ready', successor.id);
    const outgoingReleased = await recordedAt(outgoing.machineId, 'instance-released', outgoing.id);
    expect(successorReady <= outgoingReleased).toBe(true);
    const old = await machine(site, who.admin, outgoing.machineId);
    expect(sources(old)).toEqual(expect.arrayContaining(['tenant-reported-issue']));
    expect(await recordedAt(outgoing.machineId, 'member-replacement-requested', outgoing.id)).toBeDefined();
    // The issue is the tenant's report, as on its own release: one of its repair tickets.
    const tickets = (await site.call('GET', '/v2/org/acme/nico/repair-tickets', { token: who.tenant })).body.items;
    expect(tickets).toEqual(
      expect.arrayContaining([expect.objectContaining({ machineId: outgoing.machineId, instanceId: outgoing.id, summary: 'NVLink errors' })]),
    );

    expect((await site.call('DELETE', `/v2/org/acme/nico/meta-instance/${group.id}`, { token: who.tenant })).status).toBe(202);
  });

  it('at once when no machine is free: the member is released first, and its place filled as machines free up', async () => {
    const group = await readyGroup('h100', 2);
    const outgoing = group.members[0]!;
    expect((await replace(group.id, { instanceId: outgoing })).status).toBe(202);
    const members = await replaced(group.id, outgoing, 2);
    expect(members.map((m) => m.id)).toContain(group.members[1]);
    const newcomer = members.find((m) => m.id !== group.members[1])!;
    const outgoingMachine = (await instance(outgoing)).machineId;
    expect(await recordedAt(outgoingMachine, 'instance-released', outgoing)).toBeDefined();
    expect((await recordedAt(newcomer.machineId, 'instance-created', newcomer.id)) >= (await recordedAt(outgoingMachine, 'instance-released', outgoing))).toBe(
      true,
    );
    expect((await site.call('DELETE', `/v2/org/acme/nico/meta-instance/${group.id}`, { token: who.tenant })).status).toBe(202);
    await site.eventually(async () => (await site.call('GET', '/admin/machines?allocatable=true', { token: who.admin })).body.items.length >= 5);
  });

  it('members on machines under declared maintenance are replaced make-before-break before the hand-back deadline', async () => {
    const group = await readyGroup('gb200', 2);
    const held = await instance(group.members[0]!);
    const handBackBy = new Date(Date.now() + 86_400_000).toISOString();
    const declared = await site.call('POST', '/admin/maintenance', {
      token: who.admin,
      body: { kind: 'emergency', category: 'firmware', reason: 'BMC', scope: { machineIds: [held.machineId] }, handBackBy, windowMinutes: 60 },
    });
    expect(declared.status, JSON.stringify(declared.body)).toBe(201);
    const members = await replaced(group.id, held.id, 2);
    const successor = members.find((m) => m.id !== group.members[1])!;
    const heldReleased = await recordedAt(held.machineId, 'instance-released', held.id);
    expect((await recordedAt(successor.machineId, 'instance-ready', successor.id)) <= heldReleased).toBe(true);
    expect(heldReleased < handBackBy).toBe(true);
    expect((await instance(held.id)).terminationReason).toBeUndefined();
    expect((await site.call('DELETE', `/v2/org/acme/nico/meta-instance/${group.id}`, { token: who.tenant })).status).toBe(202);
  });

  it('refuses what it cannot do, and changes nothing', async () => {
    const group = await readyGroup('gb200', 1);
    expectProblem(await replace(group.id, { instanceId: 'i-not-a-member' }), 404, 'not-found');
    expectProblem(await replace(group.id, { instanceId: group.members[0], issue: { category: 'nope', summary: 'x' } }), 422);
    expectProblem(await site.call('POST', `/v2/org/globex/nico/meta-instance/${group.id}/replace`, { token: who.tenant, body: { instanceId: 'x' } }), 404);
    expect((await meta(group.id)).memberReplacements).toBeUndefined();
    expect((await site.call('DELETE', `/v2/org/acme/nico/meta-instance/${group.id}`, { token: who.tenant })).status).toBe(202);
    // Refused while it is being deleted (a window of a few stream reactions here, so not asserted), and not found once
    // it is gone.
    await site.eventually(async () => (await replace(group.id, { instanceId: group.members[0] })).status === 404);
  });

  it('refuses a member on a pinned machine: it has no substitute', async () => {
    const free = (await site.call('GET', '/admin/machines?allocatable=true&machineType=gb200', { token: who.admin })).body.items;
    const group = await readyGroup('gb200', 1, [free[0].id]);
    expectProblem(await replace(group.id, { instanceId: group.members[0] }), 409, 'invalid-state');
    expect((await meta(group.id)).memberReplacements).toBeUndefined();
    expect((await site.call('DELETE', `/v2/org/acme/nico/meta-instance/${group.id}`, { token: who.tenant })).status).toBe(202);
  });
});
