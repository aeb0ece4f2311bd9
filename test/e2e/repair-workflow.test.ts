import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { testConfig, type TestSite } from '#test/support/local-site.ts';
import {
  listedWith,
  claimForRepair,
  machine,
  readySite,
  repairRelease,
  reportIssue,
  runInstance,
  setRepairStatus,
  sources,
  type Actors,
} from '#test/support/repair-steps.ts';

// The repair-storm breaker is exercised in safety.test.ts; here it is kept closed (see afterEach).
const fleet = `
[instance_create_retry]
base_delay_ms = 10
[repair_storm]
max_quarantines = 1000
max_fraction = 1
[simulator]
machines = [ { type = "gb200", count = 8, racks = 2 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 10
cleanup_ms = 10
`;

describe('FAQ Q1: auto-repair off', () => {
  let site: TestSite;
  let who: Actors;
  beforeAll(async () => {
    ({ site, who } = await readySite(8, { config: testConfig(`${fleet}\n[auto_machine_repair_plugin]\nenabled = false\n`) }));
  });
  afterAll(async () => site?.stop());

  it('quarantines with tenant-reported-issue only, and an operator can request repair by hand', async () => {
    const machineId = await reportIssue(site, who);
    const quarantined = await machine(site, who.admin, machineId);
    expect(sources(quarantined)).toEqual(['tenant-reported-issue']);
    expect(quarantined.allocatable).toBe(false);
    expect(quarantined.notAllocatableReasons).toContain('health-override:tenant-reported-issue');
    expect(quarantined.healthOverrides[0]).toMatchObject({
      mode: 'merge',
      issue: { category: 'HARDWARE', summary: 'ECC errors', details: 'DIMM 2' },
      alerts: [{ id: 'TenantReportedIssue', classifications: ['PreventAllocations', 'SuppressExternalAlerting'] }],
    });

    const manual = await site.call('POST', `/admin/machines/${machineId}/health-overrides`, {
      token: who.admin,
      body: { template: 'RequestRepair', message: 'Manual repair trigger for tenant-reported issue' },
    });
    expect(manual.status).toBe(201);
    expect(manual.body.source).toBe('repair-request');
    expect(sources(await machine(site, who.admin, machineId))).toEqual(['repair-request', 'tenant-reported-issue']);
    await site.eventually(async () => site.events.delivered.some((e) => e.type === 'RepairRequested' && e.detail.machineId === machineId));
  });
});

describe('repair workflow with auto-repair on', () => {
  let site: TestSite;
  let who: Actors;
  beforeAll(async () => {
    ({ site, who } = await readySite(8, { config: testConfig(fleet) }));
  });
  afterAll(async () => site?.stop());
  // This file reports more issues than an 8-machine fleet's breaker allows in an hour.
  afterEach(async () => {
    await site.call('POST', '/admin/safety/repair-storm/reset', { token: who.admin, body: {} });
  });

  it('Q2: a report no repair tenant picked up keeps the machine quarantined and listed for repair', async () => {
    const machineId = await reportIssue(site, who);
    const m = await machine(site, who.admin, machineId);
    expect(sources(m)).toEqual(['repair-request', 'tenant-reported-issue']);
    expect(m.allocatable).toBe(false);
    await listedWith(site, '/v2/org/fixit/nico/machine?healthOverride=repair-request', who.repairer, machineId);
    await listedWith(site, '/admin/machines?healthOverride=repair-request', who.admin, machineId);
    // Repair automation was told, not left to poll.
    await site.eventually(async () =>
      ['MachineQuarantined', 'RepairRequested'].every((type) => site.events.delivered.some((e) => e.type === type && e.detail.machineId === machineId)),
    );
    const history = (await site.call('GET', `/admin/machines/${machineId}/history`, { token: who.admin })).body.items;
    const released = history.find((h: { action: string }) => h.action === 'instance-released');
    expect(released.issue).toEqual({ category: 'HARDWARE', summary: 'ECC errors', details: 'DIMM 2' });
    await site.eventually(async () => {
      const items = (await site.call('GET', `/admin/machines/${machineId}/history`, { token: who.admin })).body.items;
      return items.some((h: { action: string; message?: string }) => h.action === 'event-delivered' && h.message === 'RepairRequested');
    });
    // A regular tenant cannot land on it.
    const other = await site.call('GET', '/admin/machines?allocatable=true', { token: who.admin });
    expect(other.body.items.map((x: { id: string }) => x.id)).not.toContain(machineId);
  });

  it('Q3: repaired but the issue persists: repair-request goes, the new issue stays, no new repair request', async () => {
    const machineId = await reportIssue(site, who);
    const repairInstance = await claimForRepair(site, who, machineId);
    await setRepairStatus(site, who, machineId, 'Completed');
    const after = await repairRelease(site, who, repairInstance, machineId, { category: 'PERFORMANCE', summary: 'still throttling' });
    expect(sources(after)).toEqual(['tenant-reported-issue']);
    expect(after.healthOverrides[0].issue).toMatchObject({ category: 'PERFORMANCE', summary: 'still throttling' });
    expect(after.allocatable).toBe(false);
  });

  it('Q4: a completed repair returns the machine to the pool, once validated, and a tenant can use it again', async () => {
    const machineId = await reportIssue(site, who);
    const repairInstance = await claimForRepair(site, who, machineId);
    await setRepairStatus(site, who, machineId, 'completed');
    const after = await repairRelease(site, who, repairInstance, machineId);
    expect(after.validation).toMatchObject({ reason: 'repair', state: 'passed' });
    expect(sources(after)).toEqual([]);
    expect(after.allocatable).toBe(true);
    await site.eventually(async () => site.events.delivered.some((e) => e.type === 'RepairCompleted' && e.detail.machineId === machineId));
    const listed = await site.call('GET', '/admin/machines?allocatable=true', { token: who.admin });
    expect(listed.body.items.map((x: { id: string }) => x.id)).toContain(machineId);
  });

  it('Q5: released without repair_status counts as incomplete: quarantined with the default issue, no loop', async () => {
    const machineId = await reportIssue(site, who);
    const repairInstance = await claimForRepair(site, who, machineId);
    await setRepairStatus(site, who, machineId, null);
    const after = await repairRelease(site, who, repairInstance, machineId);
    expect(sources(after)).toEqual(['tenant-reported-issue']);
    expect(after.healthOverrides[0].issue).toEqual({
      category: 'OTHER',
      summary: 'RepairSystem processing incomplete',
      details: 'Machine released by repair tenant but repair status is: Unknown',
    });
    expect(after.allocatable).toBe(false);
    await site.eventually(async () => site.events.delivered.some((e) => e.type === 'RepairFailed' && e.detail.machineId === machineId));
  });

  it('a repair-tenant release without repair-request clears nothing', async () => {
    const machineId = await reportIssue(site, who);
    const repairInstance = await claimForRepair(site, who, machineId);
    expect((await site.call('DELETE', `/admin/machines/${machineId}/health-overrides/repair-request`, { token: who.admin })).status).toBe(204);
    await setRepairStatus(site, who, machineId, 'Completed');
    const after = await repairRelease(site, who, repairInstance, machineId);
    expect(sources(after)).toEqual(['tenant-reported-issue']);
  });

  it('isRepairTenant without the capability is refused and changes nothing', async () => {
    const instance = await runInstance(site, who);
    const refused = await site.call('DELETE', `/v2/org/acme/nico/instance/${instance.id}`, { token: who.tenant, body: { isRepairTenant: true } });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('capability-required');
    expect((await site.call('GET', `/v2/org/acme/nico/instance/${instance.id}`, { token: who.tenant })).body.status).toBe('Ready');
    await site.call('DELETE', `/v2/org/acme/nico/instance/${instance.id}`, { token: who.tenant });
  });

  it('a repair request never lets a repair tenant past out-for-repair, and targeted creation needs a repair request', async () => {
    const machineId = await reportIssue(site, who);
    await site.call('POST', `/admin/machines/${machineId}/health-overrides`, { token: who.admin, body: { template: 'out-for-repair' } });
    const blocked = await site.call('POST', '/v2/org/fixit/nico/instance', { token: who.repairer, body: { machineId } });
    expect(blocked.status).toBe(409);
    expect(blocked.body.code).toBe('machine-unavailable');
    const healthy = (await site.call('GET', '/admin/machines?allocatable=true', { token: who.admin })).body.items[0].id;
    const notForRepair = await site.call('POST', '/v2/org/fixit/nico/instance', { token: who.repairer, body: { machineId: healthy } });
    expect(notForRepair.status).toBe(409);
    const noCapability = await site.call('POST', '/v2/org/acme/nico/instance', { token: who.tenant, body: { machineId } });
    expect(noCapability.status).toBe(403);
  });

  it('online repair: Ready → Repairing blocks release; disabling returns to Ready; a failed one is released for full repair', async () => {
    const instance = await runInstance(site, who);
    const path = `/v2/org/acme/nico/instance/${instance.id}`;
    const enabled = await site.call('PATCH', path, {
      token: who.tenant,
      body: { onlineRepair: { enabled: true, issue: { category: 'NETWORK', summary: 'IB flaps' } } },
    });
    expect(enabled.status).toBe(200);
    expect(enabled.body.status).toBe('Repairing');
    const m = await machine(site, who.admin, instance.machineId);
    expect(m.healthOverrides.find((o: { source: string }) => o.source === 'request-online-repair').alerts[0].classifications).toEqual([
      'PreventInstanceDeletion',
    ]);
    const blocked = await site.call('DELETE', path, { token: who.tenant });
    expect(blocked.status).toBe(409);
    expect(blocked.body.code).toBe('online-repair-active');
    const fullRepairMeanwhile = await site.call('POST', `/admin/machines/${instance.machineId}/health-overrides`, {
      token: who.admin,
      body: { template: 'request-repair' },
    });
    expect(fullRepairMeanwhile.status).toBe(409);

    const disabled = await site.call('PATCH', path, {
      token: who.tenant,
      body: { onlineRepair: { enabled: false }, labels: { 'onlineRepair.status': 'Failed' } },
    });
    expect(disabled.body).toMatchObject({ status: 'Ready', labels: { 'onlineRepair.status': 'Failed' } });
    expect(sources(await machine(site, who.admin, instance.machineId))).toEqual([]);

    const released = await site.call('DELETE', path, {
      token: who.tenant,
      body: { machineHealthIssue: { category: 'NETWORK', summary: 'online repair failed' } },
    });
    expect(released.status).toBe(202);
    const history = (await site.call('GET', `/admin/machines/${instance.machineId}/history`, { token: who.admin })).body.items;
    expect(history.find((h: { action: string }) => h.action === 'instance-released').labels).toEqual({ 'onlineRepair.status': 'Failed' });
  });

  it('a concurrent release with an issue and a provider override on one machine lose neither', async () => {
    const instance = await runInstance(site, who);
    const [release, override] = await Promise.all([
      site.call('DELETE', `/v2/org/acme/nico/instance/${instance.id}`, {
        token: who.tenant,
        body: { machineHealthIssue: { category: 'OTHER', summary: 'odd' } },
      }),
      site.call('POST', `/admin/machines/${instance.machineId}/health-overrides`, { token: who.admin, body: { template: 'degraded', message: 'fans' } }),
    ]);
    expect(release.status).toBe(202);
    expect(override.status).toBe(201);
    expect(sources(await machine(site, who.admin, instance.machineId))).toEqual(['degraded', 'repair-request', 'tenant-reported-issue']);
  });

  it('provider actions: show, remove (404 when absent), labels, history with actor and message', async () => {
    const machineId = await reportIssue(site, who);
    const shown = await site.call('GET', `/admin/machines/${machineId}/health-overrides`, { token: who.admin });
    expect(shown.body.items.map((o: { source: string }) => o.source).sort()).toEqual(['repair-request', 'tenant-reported-issue']);
    expect((await site.call('DELETE', `/admin/machines/${machineId}/health-overrides/out-for-repair`, { token: who.admin })).status).toBe(404);
    expect((await site.call('DELETE', `/admin/machines/${machineId}/health-overrides/tenant-reported-issue`, { token: who.admin })).status).toBe(204);
    const labelled = await site.call('PATCH', `/admin/machines/${machineId}/labels`, { token: who.admin, body: { labels: { ticket: 'OPS-1' } } });
    expect(labelled.body.labels.ticket).toBe('OPS-1');
    const unknown = await site.call('POST', `/admin/machines/${machineId}/health-overrides`, { token: who.admin, body: { template: 'reboot-please' } });
    expect(unknown.status).toBe(422);
    const history = (await site.call('GET', `/admin/machines/${machineId}/history`, { token: who.admin })).body.items;
    const removed = history.find((h: { action: string }) => h.action === 'health-override-removed');
    expect(removed).toMatchObject({ actor: 'provider-user', changes: { healthOverride: { from: 'tenant-reported-issue' } } });
    const added = history.find(
      (h: { action: string; changes: { healthOverride?: { to?: string } } }) =>
        h.action === 'health-override-added' && h.changes.healthOverride?.to === 'tenant-reported-issue',
    );
    expect(added).toMatchObject({ actor: 'acme-user', message: 'ECC errors' });
  });
});
