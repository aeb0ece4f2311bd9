import type { Versioned } from '#domain/core/change.ts';
import type { Machine } from '#domain/core/model.ts';

/** How many machines the site has of each type, per rack and per NVLink domain: what any placement could ever get. */
export interface Catalog {
  types: Record<string, CatalogType>;
  version: number;
}

export interface CatalogType {
  count: number;
  racks: Record<string, number>;
  nvlinkDomains?: Record<string, number>;
  /** Per NVLink domain, its machines per rack: which racks' summary aggregates hold a domain's machines. */
  domainRacks?: Record<string, Record<string, number>>;
}

export const emptyCatalog = (): Catalog => ({ types: {}, version: 0 });

/** Every rack of the site, of any type, by name: the partitions a listing of every machine reads one after another. */
export const catalogRacks = (catalog: Catalog): string[] => [...new Set(Object.values(catalog.types).flatMap((type) => Object.keys(type.racks)))].sort();

/** A type's racks, by name. */
export const typeRacks = (catalog: Catalog, machineType: string): string[] => Object.keys(catalog.types[machineType]?.racks ?? {}).sort();

/** Picks one of a type's racks at random; undefined when the type has none. */
export type RackPicker = () => string | undefined;

/**
 * Picks racks at random, each in proportion to its machines: where a create starts reading free machines, so that
 * creates in different processes, which cannot see each other's claims, spread over the fleet instead of all racing
 * for the index's first page. Built once per catalog read; each pick is a binary search, whatever the fleet's size.
 */
export function rackPicker(racks: Record<string, number>, random: () => number = Math.random): RackPicker {
  const names: string[] = [];
  const machinesUpTo: number[] = [];
  let total = 0;
  for (const [rack, count] of Object.entries(racks)) {
    if (count <= 0) continue;
    total += count;
    names.push(rack);
    machinesUpTo.push(total);
  }
  return () => {
    if (names.length === 0) return undefined;
    const draw = random() * total;
    let low = 0;
    let high = names.length - 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (machinesUpTo[middle]! > draw) high = middle;
      else low = middle + 1;
    }
    return names[low];
  };
}

function adjust(catalog: Catalog, machine: Machine, delta: 1 | -1): void {
  const entry = (catalog.types[machine.machineType] ??= { count: 0, racks: {} });
  entry.count += delta;
  entry.racks[machine.rack] = (entry.racks[machine.rack] ?? 0) + delta;
  if (entry.racks[machine.rack] === 0) delete entry.racks[machine.rack];
  if (machine.nvlinkDomain !== undefined) {
    const domains = (entry.nvlinkDomains ??= {});
    domains[machine.nvlinkDomain] = (domains[machine.nvlinkDomain] ?? 0) + delta;
    if (domains[machine.nvlinkDomain] === 0) delete domains[machine.nvlinkDomain];
    const racks = ((entry.domainRacks ??= {})[machine.nvlinkDomain] ??= {});
    racks[machine.rack] = (racks[machine.rack] ?? 0) + delta;
    if (racks[machine.rack] === 0) delete racks[machine.rack];
    if (Object.keys(racks).length === 0) delete entry.domainRacks[machine.nvlinkDomain];
  }
  if (entry.count === 0) delete catalog.types[machine.machineType];
}

/**
 * Stored machines whose rack the catalog does not hold: a registration cut off between its machines and its catalog
 * update left them out. Registering them again counts them (as new), so they are listed and placed again.
 */
export function uncatalogued(catalog: Catalog, machines: readonly Machine[]): Versioned<Machine>[] {
  return machines.filter((m) => catalog.types[m.machineType]?.racks[m.rack] === undefined).map((m) => ({ before: null, after: m }));
}

/** The catalog after machines were registered or re-described; null when their types, racks and domains did not change. */
export function catalogAfter(catalog: Catalog, machines: Versioned<Machine>[]): Catalog | null {
  const next: Catalog = structuredClone(catalog);
  let changed = false;
  for (const { before, after } of machines) {
    if (before && before.machineType === after.machineType && before.rack === after.rack && before.nvlinkDomain === after.nvlinkDomain) continue;
    if (before) adjust(next, before, -1);
    adjust(next, after, 1);
    changed = true;
  }
  return changed ? next : null;
}

// What a Change carries of this file's records (core/change.ts).
declare module '#domain/core/change.ts' {
  interface Change {
    catalog?: Versioned<Catalog>;
  }
}
