import { describe, expect, it } from 'vitest';
import { PartResults } from '../../bench/part.ts';
import { heartbeatPart } from '../../bench/parts/heartbeat.ts';
import { benchContext } from '../support/bench-context.ts';

// The heartbeat bench part at a small size, so that what it measures keeps working between full runs (npm run
// bench). Only size-independent goals are asserted here; the timed ones are the bench's, at 10,000 machines.

describe('bench heartbeat part at 300 machines', () => {
  it('makes every machine allocatable after the first roster, keeps idle writes under the goal, and reports each figure with its goal', async () => {
    const options = { ...heartbeatPart.options({ BENCH_HEARTBEAT_MACHINES: '300' }), idleSimulatedSeconds: 120, changingBeats: 4, stopMachines: 5 };
    const result = await heartbeatPart.run(benchContext(), options);
    expect(result.initial_roster.allocatable).toBe(300);
    expect(result.goals.idle_writes_per_second).toMatchObject({ goal: 0.2, meets_goal: true });
    expect(result.idle.buckets_changed).toBe(0);
    // Registration and the first roster in the heat meter: every machine written, none at a second no client saw.
    expect(result.partition_heat.stream_records).toBeGreaterThanOrEqual(2 * 300);
    expect(result.partition_heat.stream_records_unwatched).toBe(0);
    // Registration puts each rack's machines in byKind under the rack: those keys are among the hottest.
    expect(result.partition_heat.hottest.map((hot) => hot.key).some((key) => key.startsWith('byKind:MACHINE#'))).toBe(true);
    expect(result.changing_roster.liveness_changes).toBeGreaterThanOrEqual(options.stopMachines);
    for (const figure of Object.values(result.goals)) {
      expect(figure.ratio).toBeCloseTo(figure.value / figure.goal, 2);
      expect(typeof figure.meets_goal).toBe('boolean');
    }
    // Without the host part's floors, the summary is the goals as measured.
    expect(heartbeatPart.summarize(result, new PartResults())).toEqual(result.goals);
  }, 240_000);
});
