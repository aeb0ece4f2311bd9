import { describe, expect, it } from 'vitest';
import { recordCreateOutcome, recordReadyInstances } from '#runtime/create-metrics.ts';
import { prometheusMetrics, prometheusName } from '#runtime/prometheus-metrics.ts';
import { anInstance } from '#test/support/fixtures.ts';

describe('Prometheus exposition of the metric catalog', () => {
  it('names series after the catalog: snake case, counters with _total, timings as millisecond summaries', () => {
    expect(prometheusName('MachinesHeartbeatStale')).toBe('fleetward_machines_heartbeat_stale');
    expect(prometheusName('CreateAttempts')).toBe('fleetward_create_attempts_total');
    expect(prometheusName('TimeToReady')).toBe('fleetward_time_to_ready_ms');
  });

  it('renders HELP and TYPE once per metric, a gauge its latest value, a counter its sum, a timing its sum and count', () => {
    const metrics = prometheusMetrics();
    metrics.gauge('Machines', 4, { machineType: 'gb200' });
    metrics.gauge('Machines', 3, { machineType: 'gb200' });
    metrics.gauge('Machines', 2, { machineType: 'h100' });
    metrics.count('CreateFailuresByOutcome', 1, { outcome: 'http-400' });
    metrics.count('CreateFailuresByOutcome', 2, { outcome: 'http-400' });
    metrics.timing('ReconcileLag', 120, { entity: 'instance' });
    metrics.timing('ReconcileLag', 30, { entity: 'instance' });
    metrics.gauge('RepairBreakerTripped', 1);
    const lines = metrics.render().split('\n');
    expect(lines).toEqual([
      '# HELP fleetward_machines Registered machines, by machine type',
      '# TYPE fleetward_machines gauge',
      'fleetward_machines{machine_type="gb200"} 3',
      'fleetward_machines{machine_type="h100"} 2',
      '# HELP fleetward_repair_breaker_tripped 1 while the repair-storm breaker is tripped, else 0',
      '# TYPE fleetward_repair_breaker_tripped gauge',
      'fleetward_repair_breaker_tripped 1',
      expect.stringMatching(/^# HELP fleetward_create_failures_by_outcome_total \S/),
      '# TYPE fleetward_create_failures_by_outcome_total counter',
      'fleetward_create_failures_by_outcome_total{outcome="http-400"} 3',
      expect.stringMatching(/^# HELP fleetward_reconcile_lag_ms \S/),
      '# TYPE fleetward_reconcile_lag_ms summary',
      'fleetward_reconcile_lag_ms_sum{entity="instance"} 150',
      'fleetward_reconcile_lag_ms_count{entity="instance"} 2',
      '',
    ]);
    expect(metrics.siteGauges()).toEqual({ RepairBreakerTripped: 1 });
  });

  it('escapes label values', () => {
    const metrics = prometheusMetrics();
    metrics.count('CreateFailuresByOutcome', 1, { outcome: 'a "quoted"\\ value\n' });
    expect(metrics.render()).toContain('{outcome="a \\"quoted\\"\\\\ value\\n"} 1');
  });

  it('serves nothing before anything was recorded', () => {
    expect(prometheusMetrics().render()).toBe('');
  });
});

describe('create and ready metrics', () => {
  it('count attempts, retries and how a create ended', () => {
    const metrics = prometheusMetrics();
    recordCreateOutcome(metrics, { ok: true, siteName: 'a', attempts: 2 });
    recordCreateOutcome(metrics, { ok: false, siteName: 'b', attempts: 1, reason: 'refused', failedWith: 'http-400' });
    const text = metrics.render();
    expect(text).toContain('fleetward_create_attempts_total 3\n');
    expect(text).toContain('fleetward_create_retries_total 1\n');
    expect(text).toContain('fleetward_create_succeeded_total 1\n');
    expect(text).toContain('fleetward_create_failures_total 1\n');
    expect(text).toContain('fleetward_create_failures_by_outcome_total{outcome="http-400"} 1\n');
  });

  it('time an instance from its creation to the commit that made it Ready, once', () => {
    const metrics = prometheusMetrics();
    const provisioning = anInstance({ createdAt: '2025-03-01T12:00:00.000Z' });
    const ready = { ...provisioning, status: 'Ready' as const, updatedAt: '2025-03-01T12:00:04.500Z' };
    recordReadyInstances(metrics, { instances: [{ before: provisioning, after: ready }], history: [] });
    recordReadyInstances(metrics, { instances: [{ before: ready, after: { ...ready, labels: { a: 'b' } } }], history: [] });
    const text = metrics.render();
    expect(text).toContain('fleetward_time_to_ready_ms_sum{machine_type="gb200"} 4500\n');
    expect(text).toContain('fleetward_time_to_ready_ms_count{machine_type="gb200"} 1\n');
  });
});
