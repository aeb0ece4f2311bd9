import type { Catalog } from '#domain/machines/catalog.ts';
import type { RackAggregate } from '#domain/machines/fleet-summary.ts';
import type { MaintenanceScope, ScopeCandidate } from '#domain/maintenance/maintenance.ts';
import type { Machine } from '#domain/core/model.ts';

// What a declaration reads to resolve its scope, whatever the fleet's size: the summary's rack aggregates of the
// racks named and of the racks the named NVLink domains span (the catalog knows both), and the machines named by
// id. A rack's or a domain's machines are found without reading a machine record.

export interface RackOfType {
  machineType: string;
  rack: string;
}

/** The (type, rack) aggregates holding the machines of the racks and NVLink domains the scope names. */
export function scopeAggregates(scope: MaintenanceScope, catalog: Catalog): RackOfType[] {
  const racks = new Set(scope.racks ?? []);
  const domains = scope.nvlinkDomains ?? [];
  const pairs = new Map<string, RackOfType>();
  for (const [machineType, entry] of Object.entries(catalog.types)) {
    const spanned = domains.flatMap((domain) => Object.keys(entry.domainRacks?.[domain] ?? {}));
    for (const rack of [...Object.keys(entry.racks).filter((r) => racks.has(r)), ...spanned]) pairs.set(`${machineType}\u0000${rack}`, { machineType, rack });
  }
  return [...pairs.values()];
}

/**
 * What the scope's names are matched against: the machines of the aggregates read but retired ones (a rack's work
 * has nothing to do on them), and the machines read by id.
 */
export function scopeCandidates(aggregates: RackAggregate[], machines: Iterable<Machine>): ScopeCandidate[] {
  const candidates = new Map<string, ScopeCandidate>();
  for (const aggregate of aggregates) {
    for (const [id, entry] of Object.entries(aggregate.machines)) {
      if (entry.lifecycle !== 'retired') candidates.set(id, { id, rack: aggregate.rack, nvlinkDomain: entry.nvlinkDomain });
    }
  }
  for (const machine of machines) candidates.set(machine.id, { id: machine.id, rack: machine.rack, nvlinkDomain: machine.nvlinkDomain });
  return [...candidates.values()];
}
