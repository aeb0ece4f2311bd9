import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestSite } from '#test/support/local-site.ts';
import { instanceStatus, readySite, type Actors } from '#test/support/repair-steps.ts';

// GET /metrics: the local runner's figures in Prometheus text exposition, checked against a fleet this file made
// (testConfig's demo fleet: 4 gb200 on 2 racks, 2 h100).

let site: TestSite;
let who: Actors;

beforeAll(async () => void ({ site, who } = await readySite(6)));
afterAll(async () => site?.stop());

async function scrape(): Promise<{ contentType: string | null; text: string; samples: Map<string, number> }> {
  const response = await fetch(`${site.url}/metrics`);
  const text = await response.text();
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    const sample = /^(\S+) (-?[0-9.e+]+)$/.exec(line);
    if (sample) samples.set(sample[1]!, Number(sample[2]));
  }
  return { contentType: response.headers.get('content-type'), text, samples };
}

async function create(machineType: string) {
  const created = await site.call('POST', '/v2/org/acme/nico/instance', { token: who.tenant, body: { machineType } });
  expect(created.status).toBe(201);
  return created.body as { id: string };
}

describe('GET /metrics', () => {
  it('serves the fleet gauges per machine type and the create, ready and lag figures of what happened', async () => {
    const ready = await create('gb200');
    await instanceStatus(site, who.tenant, 'acme', ready.id, 'Ready');
    // One retry (503 proves nothing was created), then a create the agent refuses for good.
    await site.call('POST', '/_sim/faults', { body: { op: 'create', outcomes: [503] } });
    const retried = await create('gb200');
    await instanceStatus(site, who.tenant, 'acme', retried.id, 'Ready');
    await site.call('POST', '/_sim/faults', { body: { op: 'create', outcomes: [400] } });
    const refused = await create('h100');
    await instanceStatus(site, who.tenant, 'acme', refused.id, 'Failed');

    // The gauges come from the sweep: wait for one that saw both Ready instances.
    const { contentType, text, samples } = await site.eventually(async () => {
      const scraped = await scrape();
      return scraped.samples.get('fleetward_machines_assigned{machine_type="gb200"}') === 2 ? scraped : undefined;
    });
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    for (const [name, type] of [
      ['fleetward_machines', 'gauge'],
      ['fleetward_machines_allocatable', 'gauge'],
      ['fleetward_repairs_stuck', 'gauge'],
      ['fleetward_repair_breaker_tripped', 'gauge'],
      ['fleetward_create_attempts_total', 'counter'],
      ['fleetward_create_failures_total', 'counter'],
      ['fleetward_time_to_ready_ms', 'summary'],
      ['fleetward_reconcile_lag_ms', 'summary'],
    ]) {
      expect(text).toContain(`# TYPE ${name} ${type}\n`);
      expect(text).toMatch(new RegExp(`^# HELP ${name} \\S.*$`, 'm'));
    }
    expect(samples.get('fleetward_machines{machine_type="gb200"}')).toBe(4);
    expect(samples.get('fleetward_machines{machine_type="h100"}')).toBe(2);
    expect(samples.get('fleetward_machines_allocatable{machine_type="gb200"}')).toBe(2);
    expect(samples.get('fleetward_machines_heartbeat_stale{machine_type="gb200"}')).toBe(0);
    expect(samples.get('fleetward_machines_quarantined{machine_type="gb200"}')).toBe(0);
    expect(samples.get('fleetward_repairs_unclaimed{machine_type="h100"}')).toBe(0);
    expect(samples.get('fleetward_repair_breaker_tripped')).toBe(0);
    expect(samples.get('fleetward_replacements_in_flight')).toBe(0);
    expect(samples.get('fleetward_site_agent_roster_age_seconds')).toBeGreaterThanOrEqual(0);

    // Three creates: 1 + 2 + 1 attempts, one retry, one final failure on the agent's 400.
    expect(samples.get('fleetward_create_attempts_total')).toBe(4);
    expect(samples.get('fleetward_create_retries_total')).toBe(1);
    expect(samples.get('fleetward_create_succeeded_total')).toBe(2);
    expect(samples.get('fleetward_create_failures_total')).toBe(1);
    expect(samples.get('fleetward_create_failures_by_outcome_total{outcome="http-400"}')).toBe(1);
    expect(samples.get('fleetward_time_to_ready_ms_count{machine_type="gb200"}')).toBe(2);
    expect(samples.get('fleetward_time_to_ready_ms_sum{machine_type="gb200"}')).toBeGreaterThan(0);
    expect(samples.get('fleetward_reconcile_lag_ms_count{entity="instance"}')).toBeGreaterThanOrEqual(3);
  });
});
