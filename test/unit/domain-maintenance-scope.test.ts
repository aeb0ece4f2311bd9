import { describe, expect, it } from 'vitest';
import { catalogAfter, emptyCatalog } from '#domain/machines/catalog.ts';
import type { RackAggregate } from '#domain/machines/fleet-summary.ts';
import { resolveScope } from '#domain/maintenance/maintenance.ts';
import { scopeAggregates, scopeCandidates } from '#domain/maintenance/maintenance-scope.ts';
import { aMachine } from '#test/support/fixtures.ts';

// A declaration's scope resolves through the summary's rack aggregates: the racks named, and the racks the named
// NVLink domains span, as the catalog says; never by reading the racks' machines one by one.

const fleet = [
  aMachine({ id: 'g-1', rack: 'r1', nvlinkDomain: 'nvl-1' }),
  aMachine({ id: 'g-2', rack: 'r1', nvlinkDomain: 'nvl-2' }),
  aMachine({ id: 'g-3', rack: 'r2', nvlinkDomain: 'nvl-2' }),
  aMachine({ id: 'g-4', rack: 'r2', nvlinkDomain: 'nvl-3' }),
  aMachine({ id: 'h-1', machineType: 'h100', rack: 'r9' }),
];
const catalog = catalogAfter(
  emptyCatalog(),
  fleet.map((after) => ({ before: null, after })),
)!;
const entry = (nvlinkDomain?: string, lifecycle: 'available' | 'retired' = 'available') => ({
  version: 1,
  state: 'Ready' as const,
  allocatable: true,
  overrides: [],
  quarantined: false,
  live: true,
  lifecycle,
  ...(nvlinkDomain ? { nvlinkDomain } : {}),
});
const aggregates: RackAggregate[] = [
  { machineType: 'gb200', rack: 'r1', version: 1, machines: { 'g-1': entry('nvl-1'), 'g-2': entry('nvl-2') } },
  { machineType: 'gb200', rack: 'r2', version: 1, machines: { 'g-3': entry('nvl-2'), 'g-4': entry('nvl-3') } },
  { machineType: 'h100', rack: 'r9', version: 1, machines: { 'h-1': entry() } },
];
const read = (pairs: Array<{ machineType: string; rack: string }>) =>
  aggregates.filter((a) => pairs.some((p) => p.machineType === a.machineType && p.rack === a.rack));

describe('scopeAggregates', () => {
  it('reads the aggregates of the racks named and of every rack a named NVLink domain spans, each once', () => {
    expect(scopeAggregates({ nvlinkDomains: ['nvl-2'] }, catalog)).toEqual([
      { machineType: 'gb200', rack: 'r1' },
      { machineType: 'gb200', rack: 'r2' },
    ]);
    expect(scopeAggregates({ racks: ['r9', 'r1'], nvlinkDomains: ['nvl-1'] }, catalog)).toEqual([
      { machineType: 'gb200', rack: 'r1' },
      { machineType: 'h100', rack: 'r9' },
    ]);
    expect(scopeAggregates({ machineIds: ['g-1'] }, catalog)).toEqual([]);
    expect(scopeAggregates({ racks: ['r7'], nvlinkDomains: ['nvl-9'] }, catalog)).toEqual([]);
  });
});

describe('resolving a scope through the aggregates', () => {
  const resolve = (scope: Parameters<typeof scopeAggregates>[0]) => resolveScope(scope, scopeCandidates(read(scopeAggregates(scope, catalog)), []));

  it("resolves an NVLink domain to its machines across racks, and a rack to its machines, without the machines' records", () => {
    expect(resolve({ nvlinkDomains: ['nvl-2'] })).toEqual(['g-2', 'g-3']);
    expect(resolve({ racks: ['r2'], nvlinkDomains: ['nvl-1'] })).toEqual(['g-1', 'g-3', 'g-4']);
  });

  it('names a domain or rack the site does not have', () => {
    expect(() => resolve({ nvlinkDomains: ['nvl-9'] })).toThrow(/NVLink domain nvl-9/);
    expect(() => resolve({ racks: ['r7'] })).toThrow(/rack r7/);
  });

  it('leaves a rack’s retired machines out, but takes a machine read by id as it is', () => {
    const withRetired = [{ ...aggregates[0]!, machines: { ...aggregates[0]!.machines, 'g-1': entry('nvl-1', 'retired') } }];
    expect(scopeCandidates(withRetired, []).map((c) => c.id)).toEqual(['g-2']);
    expect(scopeCandidates(withRetired, [fleet[0]!]).map((c) => c.id)).toEqual(['g-2', 'g-1']);
  });
});
