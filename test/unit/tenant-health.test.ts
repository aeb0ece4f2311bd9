import { describe, expect, it } from 'vitest';
import { hardwareHealthOverride } from '#domain/repair/agent-alerts.ts';
import { buildOverride } from '#domain/core/overrides.ts';
import { GENERIC_DEGRADED, instanceHealth } from '#domain/instances/tenant-health.ts';
import { aMachine, anInstance, AT } from '#test/support/fixtures.ts';

// The tenant's view of its machine's health (docs/api.md "Tenant view"): degraded by what touches the machine as it
// runs, worded by the alerts' tenant messages only, and judged only while the instance holds the machine.

const ready = anInstance({ status: 'Ready' });
const held = (overrides: Parameters<typeof aMachine>[0] = {}) => aMachine({ state: 'Assigned', instanceId: ready.id, ...overrides });

describe('instance health', () => {
  it('is healthy on a machine with no override', () => {
    expect(instanceHealth(ready, held())).toEqual({ health: 'healthy' });
  });

  it("is degraded by the agent's hardware-health alert, shown by its tenant message alone, never the provider's", () => {
    const override = hardwareHealthOverride(
      'm-1',
      [{ id: 'GpuXid79', message: 'GPU 3 fell off the bus (node bmc 10.0.3.7)', classifications: ['PreventAllocations'] }],
      AT,
    );
    const withTenantMessage = { ...override, alerts: override.alerts.map((a) => ({ ...a, tenantMessage: 'A GPU of this machine failed' })) };
    expect(instanceHealth(ready, held({ healthOverrides: [withTenantMessage] }))).toEqual({ health: 'degraded', healthDetail: 'A GPU of this machine failed' });
    expect(instanceHealth(ready, held({ healthOverrides: [override] }))).toEqual({ health: 'degraded', healthDetail: GENERIC_DEGRADED });
  });

  it('is degraded by an override that does not prevent allocation (online repair), not by one that only keeps the machine out of the pool', () => {
    const online = buildOverride('m-1', { template: 'request-online-repair', tenantMessage: 'Online repair in progress' }, 'acme-user', AT);
    expect(instanceHealth(ready, held({ healthOverrides: [online] }))).toEqual({ health: 'degraded', healthDetail: 'Online repair in progress' });
    const internal = buildOverride('m-1', { template: 'internal-maintenance', message: 'rack 7 PDU swap' }, 'ops', AT);
    expect(instanceHealth(ready, held({ healthOverrides: [internal] }))).toEqual({ health: 'healthy' });
  });

  it('says nothing of a machine the instance no longer holds: another tenant may hold it now', () => {
    const online = buildOverride('m-1', { template: 'request-online-repair' }, 'other-user', AT);
    expect(instanceHealth(ready, held({ instanceId: 'i-other', healthOverrides: [online] }))).toEqual({ health: 'healthy' });
    expect(instanceHealth(anInstance({ status: 'Terminated' }), held({ healthOverrides: [online] }))).toEqual({ health: 'healthy' });
    expect(instanceHealth(ready, null)).toEqual({ health: 'healthy' });
  });

  it('is maintenance-required while the instance carries a maintenance notice, worded from the notice alone', () => {
    const notice = { id: 'mnt-1', kind: 'planned' as const, category: 'firmware' as const, reason: 'BMC firmware', handBackBy: AT };
    const internal = buildOverride('m-1', { template: 'internal-maintenance', message: 'rack 7 PDU swap' }, 'ops', AT);
    const answer = instanceHealth({ ...ready, maintenance: notice }, held({ healthOverrides: [internal] }));
    expect(answer).toEqual({ health: 'maintenance-required', healthDetail: `planned maintenance mnt-1 (firmware): hand the instance back by ${AT}` });
    expect(instanceHealth({ ...anInstance({ status: 'Terminated' }), maintenance: notice }, held())).toEqual({ health: 'healthy' });
  });
});
