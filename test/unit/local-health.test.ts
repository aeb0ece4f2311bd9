import { describe, expect, it } from 'vitest';
import { assessHealth, type HealthProbe } from '#local/health.ts';

const now = 1_000_000;
const healthy: HealthProbe = {
  now,
  dynamodb: true,
  streamPoller: { running: true, lastPollAt: now - 100 },
  scheduler: { running: true, lastTickAt: now - 4_000, intervalMs: 5_000 },
  siteAgent: true,
};
const parts = (probe: HealthProbe, stallAfterMs?: number) => assessHealth(probe, stallAfterMs).down.map((d) => d.part);

describe('local runner health', () => {
  it('is ok with every part running and making progress', () => {
    expect(assessHealth(healthy)).toEqual({
      ok: true,
      checks: { api: true, store: true, streamPoller: true, scheduler: true, siteAgent: true },
      down: [],
    });
  });

  it('names dynamodb when DynamoDB Local does not answer, under the store check', () => {
    const health = assessHealth({ ...healthy, dynamodb: false });
    expect(health.ok).toBe(false);
    expect(health.down).toEqual([{ part: 'dynamodb', reason: 'DynamoDB Local does not answer' }]);
    expect(health.checks.store).toBe(false);
  });

  it('names a poller that stopped, or whose last clean pass is older than the stall limit', () => {
    expect(parts({ ...healthy, streamPoller: { running: false, lastPollAt: now } })).toEqual(['stream-poller']);
    expect(parts({ ...healthy, streamPoller: { running: true, lastPollAt: now - 2_000 } }, 2_000)).toEqual([]);
    const stalled = assessHealth({ ...healthy, streamPoller: { running: true, lastPollAt: now - 2_001 } }, 2_000);
    expect(stalled.down).toEqual([{ part: 'stream-poller', reason: 'stalled: no clean pass over the stream for 2 s' }]);
    expect(stalled.checks.streamPoller).toBe(false);
  });

  it('names the stream poller when the site runs without one', () => {
    const { streamPoller: _omitted, ...withoutPoller } = healthy;
    expect(parts(withoutPoller)).toEqual(['stream-poller']);
  });

  it('allows the scheduler one interval plus the stall limit between ticks', () => {
    expect(parts({ ...healthy, scheduler: { running: true, lastTickAt: now - 7_000, intervalMs: 5_000 } }, 2_000)).toEqual([]);
    expect(parts({ ...healthy, scheduler: { running: true, lastTickAt: now - 7_001, intervalMs: 5_000 } }, 2_000)).toEqual(['scheduler']);
    expect(parts({ ...healthy, scheduler: { running: false, lastTickAt: now, intervalMs: 5_000 } })).toEqual(['scheduler']);
  });

  it('names every part that is down, and the site agent too', () => {
    expect(parts({ ...healthy, dynamodb: false, siteAgent: false, streamPoller: { running: false, lastPollAt: now } })).toEqual([
      'dynamodb',
      'stream-poller',
      'site-agent',
    ]);
  });
});
