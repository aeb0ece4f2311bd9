import type { Machine, MetaInstance } from '#domain/model.ts';
import type { Member } from '#domain/meta-instances.ts';

/**
 * Where a meta-instance's members go: which free machines to add so the group meets its size and its constraints
 * (pinned machines, one rack), or the rack a same-rack group must move to, or why no placement exists now. Pure:
 * the candidates are what the loader read from the allocatable index.
 */

export function isSatisfied(meta: MetaInstance, healthy: Member[]): boolean {
  if (healthy.length < meta.minNodes) return false;
  const machines = new Set(healthy.map((m) => m.instance.machineId));
  if (!(meta.machineIds ?? []).every((id) => machines.has(id))) return false;
  return !meta.placement.sameRack || new Set(healthy.map((m) => m.machine?.rack)).size <= 1;
}

/** An error is `shortOfCapacity` when more free machines could resolve it (a pinned machine's state cannot). */
export type Plan = { kind: 'place'; machines: Machine[] } | { kind: 'regroup'; rack: string } | { kind: 'error'; message: string; shortOfCapacity: boolean };

/**
 * The free machines, starting at a place that depends on the meta-instance: any machines will do, and
 * meta-instances placed at the same moment would otherwise all reach for the first ones and lose races to each other.
 */
function startingAt(pool: Machine[], metaId: string): Machine[] {
  if (pool.length === 0) return pool;
  let hash = 0;
  for (const char of metaId) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  const start = hash % pool.length;
  return [...pool.slice(start), ...pool.slice(0, start)];
}

/**
 * Which machines to add. A failed member is replaced alone when the constraints still hold with the others;
 * otherwise (same rack no longer possible) the group moves to a rack that can hold it whole.
 */
export function choosePlacement(
  meta: MetaInstance,
  healthy: Member[],
  free: Machine[],
  pinned: Map<string, Machine | null>,
  isFree: (m: Machine) => string[],
): Plan {
  const held = new Set(healthy.map((m) => m.instance.machineId));
  const pinnedMissing = (meta.machineIds ?? []).filter((id) => !held.has(id));
  const chosen: Machine[] = [];
  for (const id of pinnedMissing) {
    const machine = pinned.get(id) ?? null;
    if (!machine) return { kind: 'error', message: `pinned machine ${id} is unknown`, shortOfCapacity: false };
    const reasons = isFree(machine);
    if (reasons.length > 0) return { kind: 'error', message: `pinned machine ${id} is not available: ${reasons.join(', ')}`, shortOfCapacity: false };
    chosen.push(machine);
  }
  const needed = Math.max(meta.minNodes - healthy.length - chosen.length, 0);
  const pool = free.filter((m) => !held.has(m.id) && !chosen.some((c) => c.id === m.id));
  if (!meta.placement.sameRack) {
    if (pool.length < needed)
      return { kind: 'error', message: `needs ${needed} more ${meta.machineType} machine(s); ${pool.length} free`, shortOfCapacity: true };
    return { kind: 'place', machines: [...chosen, ...startingAt(pool, meta.id).slice(0, needed)] };
  }
  const racks = new Set([...healthy.map((m) => m.machine?.rack ?? ''), ...chosen.map((m) => m.rack)]);
  const byRack = new Map<string, Machine[]>();
  for (const machine of pool) byRack.set(machine.rack, [...(byRack.get(machine.rack) ?? []), machine]);
  if (racks.size === 1) {
    const [rack] = racks;
    const inRack = byRack.get(rack!) ?? [];
    if (inRack.length >= needed) return { kind: 'place', machines: [...chosen, ...inRack.slice(0, needed)] };
  }
  if (racks.size === 0) {
    const best = [...byRack.entries()].sort((a, b) => b[1].length - a[1].length)[0];
    if (best && best[1].length >= needed) return { kind: 'place', machines: best[1].slice(0, needed) };
  }
  // The group cannot stay where it is: find a rack that can hold all of it (pinned machines fix the rack).
  const pinnedRacks = new Set(chosen.map((m) => m.rack));
  const freeIn = (rack: string) => (byRack.get(rack) ?? []).length + healthy.filter((m) => m.machine?.rack === rack).length;
  const target = [...byRack.keys()]
    .filter((rack) => pinnedRacks.size === 0 || (pinnedRacks.size === 1 && pinnedRacks.has(rack)))
    .find((rack) => freeIn(rack) + (pinnedRacks.has(rack) ? chosen.length : 0) >= meta.minNodes);
  if (target && healthy.length > 0) return { kind: 'regroup', rack: target };
  const best = Math.max(0, ...[...byRack.keys()].map(freeIn));
  return { kind: 'error', message: `no rack has ${meta.minNodes} free ${meta.machineType} machine(s) together (best: ${best})`, shortOfCapacity: true };
}
