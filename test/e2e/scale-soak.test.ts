import { describe, expect, inject, it } from 'vitest';
import { scaleSoak } from '../../bench/scale-soak.ts';

// The bench's site-scale soak (`BENCH_ONLY=scale`) at a size CI affords: the same churn, failures and invariant
// checks on 60 machines, 6 instances, 3 meta-instances and 5% failing for 8 s.
describe('scale soak, small', () => {
  it('churns through the API while machines fail, and ends with every invariant holding', async () => {
    const report = await scaleSoak(
      inject('dynamoEndpoint'),
      `test-${process.pid}`,
      {
        machines: 60,
        instances: 6,
        metaInstances: 3,
        churnSeconds: 8,
        failurePercent: 5,
        apiWorkers: 2,
        sweepIntervalMs: 1_000,
        heartbeatIntervalSeconds: 1,
        heartbeatTimeoutSeconds: 5,
      },
      () => {},
    );
    expect(report.invariants).toEqual({
      machine_held_twice: [],
      machine_and_instance_disagree: [],
      orphaned_members: [],
      failures_not_replaced: [],
      meta_instances_short: [],
      ok: true,
    });
    expect(report.failures).toMatchObject({ planned: 3, injected: 3, replaced: 3 });
    expect(report.reconcile_lag.failure_to_replacement_ready.override.failures + report.reconcile_lag.failure_to_replacement_ready.heartbeat.failures).toBe(3);
    expect(report.api.calls).toBeGreaterThan(0);
    expect(report.api.all.p99).toBeGreaterThanOrEqual(report.api.all.median);
    expect(report.reconcile_lag.create_to_ready.samples + report.reconcile_lag.release_to_terminated.samples).toBeGreaterThan(0);
    expect(report.dynamodb_per_minute.write_units).toBeGreaterThan(0);
    expect(report.dynamodb_per_minute.read_units).toBeGreaterThan(0);
    // The site's start beside its floor, and every write of the soak in the heat meter, each at its second.
    expect(report.site_start.floor_s).toBeGreaterThan(0);
    expect(report.site_start.ratio_to_floor).toBeCloseTo((report.site_start.fleet_allocatable_after_up_s * 1000) / (report.site_start.floor_s * 1000), 0);
    expect(report.partition_heat.stream_records).toBeGreaterThan(60);
    expect(report.partition_heat.stream_records_unwatched).toBe(0);
    expect(report.partition_heat.hottest[0]!.wcu_per_s).toBe(report.partition_heat.max_wcu_per_s);
    expect(report.partition_heat.max_wcu_per_s).toBeGreaterThan(0);
  }, 60_000);
});
