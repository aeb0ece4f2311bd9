import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_THROTTLE_SHARE } from '#local/aws-semantics/config.ts';
import { scanTable, startTestSite, testConfig, type TestSite } from '#test/support/local-site.ts';
import { actors, type Actors } from '#test/support/repair-steps.ts';

// FLEETWARD_AWS_SEMANTICS=index-lag: every index read of the site sees the table as it was a second ago. Two
// meta-instances lose a member each at the same moment, with room for one replacement in flight site-wide; a creation
// takes 1.5 s at the agent, so replacements stay in flight long enough to be seen. Throughout, read from the table
// itself: no meta-instance has more live members than minNodes, and replacements in flight never exceed the cap.
const config = `
[instance_create_retry]
base_delay_ms = 10
[heartbeat]
timeout_seconds = 10
[meta_instance]
max_replacements_in_flight = 1
[simulator]
machines = [ { type = "gb200", count = 8, racks = 2 } ]
heartbeat_interval_seconds = 0.1
provision_ms = 1500
cleanup_ms = 10
`;
const LIVE = new Set(['Provisioning', 'Ready', 'Repairing']);
const base = '/v2/org/acme/nico/meta-instance';

let site: TestSite;
let who: Actors;
beforeAll(async () => {
  site = await startTestSite({
    config: testConfig(config),
    awsSemantics: { modes: ['index-lag'], seed: 20_261_127, throttleShare: DEFAULT_THROTTLE_SHARE, indexLagMs: 1_000 },
  });
  who = await actors(site);
  // Every write reads its images first, so a busy host takes a while longer to bring the fleet up.
  const allocatable = async () => (await site.call('GET', '/admin/machines?allocatable=true', { token: who.admin })).body.items.length >= 8;
  await site.eventually(allocatable, 60_000);
}, 90_000);
afterAll(() => site?.stop());

/** What the table holds now (a consistent Scan, which no index lag touches): live members over minNodes, replacements in flight. */
async function observe() {
  const items = await scanTable(site);
  const instances = items.filter((item) => item.entity === 'instance');
  const metas = items.filter((item) => item.entity === 'meta-instance' && item.status !== 'Deleted');
  const excess = Math.max(
    0,
    ...metas.map((meta) => instances.filter((i) => i.metaInstanceId === meta.id && LIVE.has(String(i.status))).length - Number(meta.minNodes)),
  );
  const inFlight = instances.filter((i) => i.replacement === true && i.status === 'Provisioning').length;
  return { excess, inFlight };
}

describe('a site whose indexes lag by a second', () => {
  it('keeps each meta-instance at minNodes live members and replacements within the cap', { timeout: 90_000 }, async () => {
    const seen = { excess: 0, inFlight: 0, samples: 0 };
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const now = await observe();
        seen.excess = Math.max(seen.excess, now.excess);
        seen.inFlight = Math.max(seen.inFlight, now.inFlight);
        seen.samples++;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();

    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const created = await site.call('POST', base, { token: who.tenant, body: { machineType: 'gb200', minNodes: 2 } });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      ids.push(created.body.id);
    }
    const get = async (id: string) => (await site.call('GET', `${base}/${id}`, { token: who.tenant })).body;
    const instance = async (id: string) => (await site.call('GET', `/v2/org/acme/nico/instance/${id}`, { token: who.tenant })).body;
    /** Ready, with two Ready instances on none of the `avoiding` machines. */
    const allReady = async (id: string, avoiding: string[] = []) => {
      const meta = await get(id);
      if (meta.status !== 'Ready' || meta.instanceIds.length !== 2) return false;
      return (await Promise.all(meta.instanceIds.map(instance))).every((i) => i.status === 'Ready' && !avoiding.includes(i.machineId));
    };
    for (const id of ids) await site.eventually(() => allReady(id), 30_000);

    // One member of each fails at once: two replacements wanted, one slot.
    const failing = await Promise.all(ids.map(async (id) => (await instance((await get(id)).instanceIds[0])).machineId as string));
    await Promise.all(
      failing.map((machineId) => site.call('POST', `/admin/machines/${machineId}/health-overrides`, { token: who.admin, body: { template: 'degraded' } })),
    );
    for (const id of ids) await site.eventually(() => allReady(id, failing), 40_000);

    watching = false;
    await watcher;
    expect(seen.samples).toBeGreaterThan(10);
    expect(seen.excess).toBe(0);
    // Replacements were seen in flight, never more than the cap.
    expect(seen.inFlight).toBe(1);
  });
});
