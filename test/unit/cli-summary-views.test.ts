import { describe, expect, it } from 'vitest';
import { renderSummary, type FleetSummary } from '#cli/views.ts';

// `fleetward machine summary`: one row per type, and per NVLink domain only when the summary counts them.

const summary = (byType: FleetSummary['byType']): FleetSummary => ({
  machines: 20,
  allocatable: 18,
  stale: 0,
  byState: { Ready: 20 },
  byOverride: {},
  byLifecycle: { available: 20 },
  byType,
  asOf: '2026-11-27T10:00:00.000Z',
});

describe('machine summary', () => {
  it('shows a row per type, without domain columns when no domain is counted', () => {
    const text = renderSummary(summary({ h100: { machines: 8, allocatable: 8 }, gb200: { machines: 12, allocatable: 10 } }));
    const rows = text.split('\n').slice(-3);
    expect(rows[0]).toMatch(/^TYPE\s+MACHINES\s+ALLOCATABLE$/);
    expect(rows.slice(1).map((r) => r.split(/\s+/))).toEqual([
      ['gb200', '12', '10'],
      ['h100', '8', '8'],
    ]);
  });

  it('adds a row per NVLink domain, in numeric order, with its quarantined machines', () => {
    const tally = (machines: number, quarantined: number) => ({ machines, allocatable: machines - quarantined, quarantined });
    const text = renderSummary(
      summary({ gb200: { machines: 12, allocatable: 10, byNvlinkDomain: { 'gb200-nvl10': tally(4, 2), 'gb200-nvl2': tally(8, 0) } } }),
    );
    const rows = text.split('\n').slice(-4);
    expect(rows[0]).toMatch(/^TYPE\s+NVLINK DOMAIN\s+MACHINES\s+ALLOCATABLE\s+QUARANTINED$/);
    expect(rows.slice(1).map((r) => r.trim().split(/\s+/))).toEqual([
      ['gb200', '*', '12', '10', '-'],
      ['gb200', 'gb200-nvl2', '8', '8', '0'],
      ['gb200', 'gb200-nvl10', '4', '2', '2'],
    ]);
  });
});
