import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSite, testConfig, type TestSite } from '#test/support/local-site.ts';

// The simulated agent sends its roster in 4 parts a beat, as an agent whose roster outgrows one beat does: the
// controller makes every machine allocatable from the parts, and keeps each part's time.

let site: TestSite;

beforeAll(async () => {
  site = await startTestSite({
    config: testConfig(`
[simulator]
machines = [ { type = "gb200", count = 12, racks = 2 } ]
heartbeat_interval_seconds = 0.2
heartbeat_parts = 4
`),
  });
});
afterAll(() => site?.stop());

describe('a roster sent in parts', () => {
  it('makes the whole fleet allocatable, and the site heartbeat keeps every part', async () => {
    const admin = await site.token('provider', ['provider-admin']);
    const summary = await site.eventually(async () => {
      const { body } = await site.call('GET', '/admin/fleet/summary', { token: admin });
      return body.byType?.gb200?.allocatable === 12 ? body : undefined;
    });
    expect(summary.byType.gb200.allocatable).toBe(12);
    const heartbeat = await site.ctx.store.getSiteHeartbeat();
    expect(heartbeat).toMatchObject({ machineCount: 12, parts: { count: 4 } });
    expect(heartbeat!.parts!.seenAt.every((at) => at !== '')).toBe(true);
  });
});
