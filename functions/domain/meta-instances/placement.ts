import type { Machine, MetaInstance, Placement } from '#domain/core/model.ts';
import type { Member } from '#domain/meta-instances/meta-instances.ts';

/**
 * Where a meta-instance's members go: which free machines to add so the group meets its size and its constraints
 * (pinned machines, one rack, one NVLink domain), or the place a together-group must move to, or why no placement
 * exists now. Pure: the candidates are what the loader read from the allocatable indexes.
 */

/**
 * The place members of a together-group share: its rack, its NVLink domain, or both; undefined for a machine that
 * can never be in such a group (no domain while one is asked for). Null when the group may be anywhere.
 */
export type GroupOf = (machine: Machine) => string | undefined;

export function groupOf(placement: Placement): GroupOf | null {
  const { sameRack, sameNvlinkDomain } = placement;
  if (!sameNvlinkDomain) return sameRack ? (m) => m.rack : null;
  if (!sameRack) return (m) => m.nvlinkDomain;
  return (m) => (m.nvlinkDomain === undefined ? undefined : `${m.rack} / ${m.nvlinkDomain}`);
}

/** What a group is together in, for messages. */
export function placeName(placement: Placement): string {
  if (!placement.sameNvlinkDomain) return 'rack';
  return placement.sameRack ? 'rack and NVLink domain' : 'NVLink domain';
}

export function isSatisfied(meta: MetaInstance, healthy: Member[]): boolean {
  if (healthy.length < meta.minNodes) return false;
  const machines = new Set(healthy.map((m) => m.instance.machineId));
  if (!(meta.machineIds ?? []).every((id) => machines.has(id))) return false;
  const group = groupOf(meta.placement);
  if (!group) return true;
  const places = new Set(healthy.map((m) => (m.machine ? group(m.machine) : undefined)));
  return places.size <= 1 && !places.has(undefined);
}

/** An error is `shortOfCapacity` when more free machines could resolve it (a pinned machine's state cannot). */
export type Plan = { kind: 'place'; machines: Machine[] } | { kind: 'regroup'; place: string } | { kind: 'error'; message: string; shortOfCapacity: boolean };

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

const isReservedFor = (machine: Machine, org: string): boolean => machine.reservation?.org === org;

/** The org's reserved machines first, each part in the order given. */
const reservedFirst = (machines: Machine[], org: string): Machine[] => [
  ...machines.filter((m) => isReservedFor(m, org)),
  ...machines.filter((m) => !isReservedFor(m, org)),
];

/**
 * Which machines to add. A failed member is replaced alone when the constraints still hold with the others;
 * otherwise (same place no longer possible) the group moves to a place that can hold it whole.
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
  // The org's reserved machines come before the shared pool's, wherever the group may go.
  const pool = reservedFirst(
    free.filter((m) => !held.has(m.id) && !chosen.some((c) => c.id === m.id)),
    meta.org,
  );
  const group = groupOf(meta.placement);
  if (!group) {
    if (pool.length < needed)
      return { kind: 'error', message: `needs ${needed} more ${meta.machineType} machine(s); ${pool.length} free`, shortOfCapacity: true };
    const mine = pool.filter((m) => isReservedFor(m, meta.org));
    const shared = pool.filter((m) => !isReservedFor(m, meta.org));
    return { kind: 'place', machines: [...chosen, ...startingAt(mine, meta.id), ...startingAt(shared, meta.id)].slice(0, needed + chosen.length) };
  }
  const what = placeName(meta.placement);
  if (chosen.some((m) => group(m) === undefined)) {
    return { kind: 'error', message: `a pinned machine has no NVLink domain but one ${what} was asked for`, shortOfCapacity: false };
  }
  const places = new Set([...healthy.map((m) => (m.machine ? group(m.machine) : undefined) ?? ''), ...chosen.map((m) => group(m)!)]);
  const byPlace = new Map<string, Machine[]>();
  for (const machine of pool) {
    const place = group(machine);
    if (place !== undefined) byPlace.set(place, [...(byPlace.get(place) ?? []), machine]);
  }
  if (places.size === 1) {
    const [place] = places;
    const inPlace = byPlace.get(place!) ?? [];
    if (inPlace.length >= needed) return { kind: 'place', machines: [...chosen, ...inPlace.slice(0, needed)] };
  }
  if (places.size === 0) {
    const reservedIn = (machines: Machine[]) => machines.filter((m) => isReservedFor(m, meta.org)).length;
    const best = [...byPlace.entries()]
      .filter(([, machines]) => machines.length >= needed)
      .sort((a, b) => reservedIn(b[1]) - reservedIn(a[1]) || b[1].length - a[1].length)[0];
    if (best) return { kind: 'place', machines: best[1].slice(0, needed) };
  }
  // The group cannot stay where it is: find a place that can hold all of it (pinned machines fix the place).
  const pinnedPlaces = new Set(chosen.map((m) => group(m)!));
  const freeIn = (place: string) => (byPlace.get(place) ?? []).length + healthy.filter((m) => m.machine !== null && group(m.machine) === place).length;
  const target = [...byPlace.keys()]
    .filter((place) => pinnedPlaces.size === 0 || (pinnedPlaces.size === 1 && pinnedPlaces.has(place)))
    .find((place) => freeIn(place) + (pinnedPlaces.has(place) ? chosen.length : 0) >= meta.minNodes);
  if (target && healthy.length > 0) return { kind: 'regroup', place: target };
  const best = Math.max(0, ...[...byPlace.keys()].map(freeIn));
  return { kind: 'error', message: `no ${what} has ${meta.minNodes} free ${meta.machineType} machine(s) together (best: ${best})`, shortOfCapacity: true };
}
