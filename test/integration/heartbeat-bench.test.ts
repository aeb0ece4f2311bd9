import { describe, expect, inject, it } from 'vitest';
import { defaultHeartbeatOptions, heartbeatCost, standaloneContext } from '../../bench/heartbeat.ts';

// The heartbeat bench at a small size, so that what it measures keeps working between full runs (npm run bench).
// Only size-independent goals are asserted here; the timed ones are the bench's, at 10,000 machines.

describe('bench/heartbeat.ts at 300 machines', () => {
  it('makes every machine allocatable after the first roster, keeps idle writes under the goal, and reports each figure with its goal', async () => {
    const options = { ...defaultHeartbeatOptions, machines: 300, idleSimulatedSeconds: 120, changingBeats: 4, stopMachines: 5 };
    const result = await heartbeatCost(inject('dynamoEndpoint'), `t${Date.now()}`, options, standaloneContext(), () => {});
    expect(result.initial_roster.allocatable).toBe(300);
    expect(result.goals.idle_writes_per_second).toMatchObject({ goal: 0.2, meets_goal: true });
    expect(result.idle.buckets_changed).toBe(0);
    expect(result.changing_roster.liveness_changes).toBeGreaterThanOrEqual(options.stopMachines);
    for (const figure of Object.values(result.goals)) {
      expect(figure.ratio).toBeCloseTo(figure.value / figure.goal, 2);
      expect(typeof figure.meets_goal).toBe('boolean');
    }
  }, 240_000);
});
