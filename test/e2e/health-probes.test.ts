import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, testConfig, type TestSite } from '#test/support/local-site.ts';
import { deliveredOf, machine, readySite, sources, type Actors } from '#test/support/repair-steps.ts';

// The simulated agent's health probes on the whole local site: an alert it reports quarantines the machine through
// the heartbeat and the roster walk alone (the sweep runs once a minute), and clears when the agent stops reporting it.
const config = `
[instance_create_retry]
base_delay_ms = 10
# A fleet of 4: one quarantine is 25% of it, which would trip the breaker at the default fraction.
[repair_storm]
max_fraction = 1
[simulator]
machines = [ { type = "gb200", count = 4, racks = 1 } ]
heartbeat_interval_seconds = 0.5
provision_ms = 10
cleanup_ms = 10
`;

const SWEEP_INTERVAL_MS = 60_000;
const alerts = [
  { id: 'GpuXid79', message: 'GPU 3 fell off the bus', classifications: ['PreventAllocations', 'SuppressExternalAlerting'] },
  { id: 'FanSlow', message: 'fan 2 below 40%', classifications: ['SuppressExternalAlerting'] },
];

let site: TestSite;
let who: Actors;

beforeAll(async () => {
  ({ site, who } = await readySite(4, { config: testConfig(config), sweepIntervalMs: SWEEP_INTERVAL_MS }));
});
afterAll(async () => site?.stop());

describe('POST /_sim/machines/{id}/health', () => {
  it('quarantines the machine with hardware-health and asks for repair; clearing it lifts the quarantine', { timeout: 60_000 }, async () => {
    const id = 'gb200-r1-02';
    expect((await site.call('POST', `/_sim/machines/${id}/health`, { body: { alerts } })).status).toBe(200);

    const quarantined = await site.eventually(async () => {
      const m = await machine(site, who.admin, id);
      return sources(m).includes('hardware-health') ? m : undefined;
    }, SWEEP_INTERVAL_MS / 3);
    expect(quarantined.healthOverrides.find((o: { source: string }) => o.source === 'hardware-health')).toMatchObject({
      mode: 'merge',
      createdBy: 'site-agent',
      // Only the alert that prevents allocation is the controller's business.
      alerts: [{ ...alerts[0], target: id }],
    });
    expect(sources(quarantined)).toEqual(['hardware-health', 'repair-request']);
    expect(quarantined.allocatable).toBe(false);
    expect(quarantined.notAllocatableReasons).toContain('health-override:hardware-health');
    // The two events are separate stream records: one may arrive long after the other (chaos delays some).
    await site.eventually(async () => deliveredOf(site, 'MachineQuarantined', id).length === 1 && deliveredOf(site, 'RepairRequested', id).length === 1);

    expect((await site.call('POST', `/_sim/machines/${id}/health`, { body: { alerts: [] } })).status).toBe(200);
    const cleared = await site.eventually(async () => {
      const m = await machine(site, who.admin, id);
      return sources(m).includes('hardware-health') ? undefined : m;
    }, SWEEP_INTERVAL_MS / 3);
    // The repair request is repair automation's to finish: the agent's all-clear does not cancel it.
    expect(sources(cleared)).toEqual(['repair-request']);
    // Clearing quarantines nothing again: once the stream is idle, still the one event.
    await site.streamIdle();
    expect(deliveredOf(site, 'MachineQuarantined', id)).toHaveLength(1);
  });

  it('refuses a body the agent contract does not allow (422 problem+json) and an unknown machine (404)', async () => {
    expectProblem(await site.call('POST', '/_sim/machines/gb200-r1-01/health', { body: { alerts: [{ id: 'x' }] } }), 422, 'validation-failed');
    expect((await site.call('POST', '/_sim/machines/nope/health', { body: { alerts: [] } })).status).toBe(404);
    expect(sources(await machine(site, who.admin, 'gb200-r1-01'))).toEqual([]);
  });
});
