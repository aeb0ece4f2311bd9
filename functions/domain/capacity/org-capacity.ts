import { capacityMovesOf, feedEntriesOf, standingOf, type CapacityMove, type CapacityStanding } from '#domain/capacity/capacity-events.ts';
import { MAX_TRANSACTION_ITEMS, type Change, type Versioned } from '#domain/core/change.ts';
import { heartbeatStale, preventingSources, type HeartbeatView } from '#domain/core/health.ts';
import type { Instance, InstanceStatus, Machine } from '#domain/core/model.ts';
import { ageMs, iso } from '#domain/core/time.ts';
import { sameValue } from '#domain/core/same-value.ts';

// A tenant org's capacity (CAP01) without reading its machines. Each machine has one node item holding what its
// org's capacity counts of it (null while no org has it); per org, a few shard items hold counters. A decision reads
// the machine, its instance and its node item as they are now, and moves the counters by the exact difference
// between the node's old and new entry, all in one transaction guarded by version: a duplicated, late or replayed
// stream record finds the node already in line and changes nothing. Heartbeat staleness changes with time alone, so
// the counters count fit machines by heartbeat class (roster membership and last heartbeat) and the reader applies
// the heartbeat rule to each class, as the fleet summary does.

/** What an org's capacity counts of one delivered machine; also its node record (CAP02). */
export interface CapacityEntry {
  org: string;
  machineType: string;
  /** In one of the org's reservations. */
  reserved: boolean;
  reservationId?: string;
  /** Holding the org's Ready or Repairing instance. */
  inUse: boolean;
  instanceId?: string;
  /** The instance's label `project`. */
  project?: string;
  /** What keeps it out of allocation (health override sources, a failed cleanup); empty when nothing does. */
  unfit: string[];
  live: boolean;
  lastHeartbeatAt?: string;
  createdAt: string;
}

/** One machine's node item: its entry while some org has it, null otherwise. */
export interface CapacityNode {
  machineId: string;
  entry: CapacityEntry | null;
  /** The machine's standing as the capacity-events feed last accounted it (domain/capacity/capacity-events.ts); absent before the feed. */
  standing?: CapacityStanding | null;
  version: number;
}

/** Counters of one org's machines whose ids hash to `shard`. */
export interface OrgCapacityShard {
  org: string;
  shard: number;
  counters: Record<string, number>;
  /** When the counters last moved (a node's change or a recount); absent on items stored before it was kept. */
  movedAt?: string;
  version: number;
}

/** Shards per org: a burst of one org's changes spreads over this many counter items, and a read takes them all. */
export const ORG_CAPACITY_SHARDS = 4;

export function capacityShardOf(machineId: string): number {
  let hash = 0;
  for (const char of machineId) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return hash % ORG_CAPACITY_SHARDS;
}

/** A reservation holding a machine for an org. */
export interface MachineReservation {
  id: string;
  org: string;
}

/** The reservation a machine is in, if any: the one place capacity learns it. */
export const reservationOf = (machine: Machine): MachineReservation | undefined => machine.reservation;

/** Statuses in which an instance holds its machine; of those, the ones in which the tenant uses it. */
const HOLDING: ReadonlySet<InstanceStatus> = new Set(['Provisioning', 'Ready', 'Repairing', 'Terminating']);
const IN_USE: ReadonlySet<InstanceStatus> = new Set(['Ready', 'Repairing']);

/** The instance holding the machine, if the machine's record and the instance's agree on it. */
export const holderOf = (machine: Machine, instance: Instance | null): Instance | null =>
  instance && machine.instanceId === instance.id && instance.machineId === machine.id && HOLDING.has(instance.status) ? instance : null;

/** The machine as its org's capacity counts it: null when neither an instance nor a reservation gives it to an org. */
export function capacityEntryOf(machine: Machine, instance: Instance | null): CapacityEntry | null {
  const holder = holderOf(machine, instance);
  const reservation = reservationOf(machine);
  const org = holder?.org ?? reservation?.org;
  if (org === undefined) return null;
  const reserved = reservation !== undefined && reservation.org === org;
  const project = holder?.labels.project;
  return {
    org,
    machineType: machine.machineType,
    reserved,
    ...(reserved ? { reservationId: reservation.id } : {}),
    inUse: holder !== null && IN_USE.has(holder.status),
    ...(holder ? { instanceId: holder.id } : {}),
    ...(project !== undefined ? { project } : {}),
    unfit: [...preventingSources(machine.healthOverrides), ...(machine.cleanup?.phase === 'failed' ? ['cleanup-failed'] : [])].sort(),
    live: machine.heartbeatLive,
    ...(machine.lastHeartbeatAt ? { lastHeartbeatAt: machine.lastHeartbeatAt } : {}),
    createdAt: machine.createdAt,
  };
}

// Counter names: `|`-separated parts, each URI-encoded (a machine type may hold any character).
const SEP = '|';
const name = (...parts: string[]): string => parts.map(encodeURIComponent).join(SEP);
const partsOf = (counter: string): string[] => counter.split(SEP).map(decodeURIComponent);

/** The first part of a reservation's counters: no machine type is spelt so (types are lower-case letters, digits, . _ -). */
const RESERVATION = '#reservation';

/** The counters one delivered machine adds, each by one; a reserved machine adds its reservation's too. */
export function capacityCounterKeys(entry: CapacityEntry): string[] {
  const fitClass = [entry.live ? 'live' : 'off', entry.lastHeartbeatAt ?? ''];
  const keys = [name(entry.machineType, 'delivered')];
  if (entry.reserved) keys.push(name(entry.machineType, 'reserved'));
  if (entry.inUse) keys.push(name(entry.machineType, 'inUse'));
  if (entry.unfit.length === 0) keys.push(name(entry.machineType, 'fit', ...fitClass));
  const reservation = entry.reserved ? entry.reservationId : undefined;
  if (reservation !== undefined) {
    keys.push(name(RESERVATION, reservation, 'machines'));
    if (entry.inUse) keys.push(name(RESERVATION, reservation, 'inUse'));
    keys.push(entry.unfit.length === 0 ? name(RESERVATION, reservation, 'fit', ...fitClass) : name(RESERVATION, reservation, 'quarantined'));
  }
  return keys;
}

interface ReservationHealthCounts {
  machines: number;
  healthy: number;
  inUse: number;
  quarantined: number;
}

/** One reservation's health from its org's counter shards: healthy is its fit machines whose heartbeat class is fresh now. */
export function reservationHealth(shards: OrgCapacityShard[], reservationId: string, heartbeat: HeartbeatView, now: Date): ReservationHealthCounts {
  const health: ReservationHealthCounts = { machines: 0, healthy: 0, inUse: 0, quarantined: 0 };
  for (const shard of shards) {
    for (const [counter, count] of Object.entries(shard.counters)) {
      const [first, id, what, live, lastHeartbeatAt] = partsOf(counter) as [string, string?, string?, string?, string?];
      if (first !== RESERVATION || id !== reservationId) continue;
      if (what === 'fit') {
        const probe = { heartbeatLive: live === 'live', ...(lastHeartbeatAt ? { lastHeartbeatAt } : {}) } as Machine;
        if (!heartbeatStale(probe, heartbeat, now)) health.healthy += count;
      } else health[what as 'machines' | 'inUse' | 'quarantined'] += count;
    }
  }
  return health;
}

/** Counters moved by `delta`; names that reach zero are dropped. */
export function movedCounters(counters: Record<string, number>, delta: Record<string, number>): Record<string, number> {
  const next = { ...counters };
  for (const [key, by] of Object.entries(delta)) {
    const value = (next[key] ?? 0) + by;
    if (value === 0) delete next[key];
    else next[key] = value;
  }
  return next;
}

export const orgShardRef = (org: string, shard: number): string => JSON.stringify([org, shard]);

/** What a batch of machines' capacity needs, read as it is now. */
export interface CapacitySnapshot {
  machineIds: string[];
  machines: Map<string, Machine>;
  instances: Map<string, Instance>;
  nodes: Map<string, CapacityNode>;
  /** By `orgShardRef`, every shard an old or new entry counts in; null when not stored yet. */
  shards: Map<string, OrgCapacityShard | null>;
  /** The last `seq` of each org's capacity-events feed that a move of these machines numbers on from (0: none yet). */
  feedHeads: Map<string, number>;
  now: string;
}

/** The node entries the machines now have, by machine id. */
export function entriesNow({
  machineIds,
  machines,
  instances,
}: Pick<CapacitySnapshot, 'machineIds' | 'machines' | 'instances'>): Map<string, CapacityEntry | null> {
  return new Map(
    machineIds.map((id) => {
      const machine = machines.get(id);
      const instance = machine?.instanceId ? (instances.get(machine.instanceId) ?? null) : null;
      return [id, machine ? capacityEntryOf(machine, instance) : null];
    }),
  );
}

/**
 * The standings the machines now have, by machine id (null for a machine that is gone), each with the instance its
 * node last named as holding it when the machine no longer names that one (`endedHolds`).
 */
function standingsNow({
  machineIds,
  machines,
  instances,
  nodes,
}: Pick<CapacitySnapshot, 'machineIds' | 'machines' | 'instances' | 'nodes'>): Map<string, CapacityStanding | null> {
  return new Map(
    machineIds.map((id) => {
      const machine = machines.get(id);
      const instance = machine?.instanceId ? (instances.get(machine.instanceId) ?? null) : null;
      const ended = endedHoldOf(nodes.get(id), machine);
      return [id, machine ? standingOf(machine, instance, ended === undefined ? null : (instances.get(ended) ?? null)) : null];
    }),
  );
}

/** The instance the node last named as holding its machine, when the machine no longer names it. */
function endedHoldOf(node: CapacityNode | undefined, machine: Machine | undefined): string | undefined {
  const heldBy = node?.standing?.heldBy;
  return heldBy !== undefined && heldBy !== machine?.instanceId ? heldBy : undefined;
}

/** The instances of the nodes' ended holds (`endedHoldOf`): `standingsNow` reads them beside the machines' own. */
export const endedHolds = (machines: ReadonlyMap<string, Machine>, nodes: ReadonlyMap<string, CapacityNode>): string[] =>
  [...nodes].flatMap(([id, node]) => endedHoldOf(node, machines.get(id)) ?? []);

/** The capacity-events moves of each machine whose standing changed since its node last accounted it. */
export function feedMovesNow(snapshot: Pick<CapacitySnapshot, 'machineIds' | 'machines' | 'instances' | 'nodes'>): Map<string, CapacityMove[]> {
  const moves = new Map<string, CapacityMove[]>();
  for (const [machineId, standing] of standingsNow(snapshot)) {
    const ofMachine = capacityMovesOf(snapshot.nodes.get(machineId)?.standing ?? null, standing);
    if (ofMachine.length > 0) moves.set(machineId, ofMachine);
  }
  return moves;
}

/**
 * Each node brought in line with its machine, its org's counters moved by the difference, and the feed's entries of
 * its change with their events; null when all are in line. Machines whose writes would take the change past one
 * transaction are left for the next pass (`deferred`): each costs its node, a counter item per org it first names, and
 * an entry and an event per move.
 */
export function capacityChange(snapshot: CapacitySnapshot): { change: Change | null; deferred: string[] } {
  const deltas = new Map<string, Record<string, number>>();
  const move = (machineId: string, entry: CapacityEntry | null, by: number) => {
    if (!entry) return;
    const ref = orgShardRef(entry.org, capacityShardOf(machineId));
    const delta = deltas.get(ref) ?? deltas.set(ref, {}).get(ref)!;
    for (const key of capacityCounterKeys(entry)) delta[key] = (delta[key] ?? 0) + by;
  };
  const standings = standingsNow(snapshot);
  const feedMoves = feedMovesNow(snapshot);
  const deferred: string[] = [];
  let items = 0;
  const nodes = [...entriesNow(snapshot)].flatMap(([machineId, entry]) => {
    const before = snapshot.nodes.get(machineId) ?? null;
    const standing = standings.get(machineId) ?? null;
    if (sameValue(before?.entry ?? null, entry) && sameValue(before?.standing ?? null, standing)) return [];
    const newShards = new Set(
      [before?.entry, entry].flatMap((e) => (e ? [orgShardRef(e.org, capacityShardOf(machineId))] : [])).filter((ref) => !deltas.has(ref)),
    );
    const cost = 1 + newShards.size + 2 * (feedMoves.get(machineId)?.length ?? 0);
    if (deferred.length > 0 || items + cost > MAX_TRANSACTION_ITEMS) {
      deferred.push(machineId);
      return [];
    }
    items += cost;
    move(machineId, before?.entry ?? null, -1);
    move(machineId, entry, 1);
    return [{ before, after: { machineId, entry, standing, version: before?.version ?? 0 } }];
  });
  if (nodes.length === 0) return { change: null, deferred };
  const feed = feedEntriesOf(
    nodes.flatMap(({ before, after }) => {
      const moves = feedMoves.get(after.machineId);
      const machineType = snapshot.machines.get(after.machineId)?.machineType ?? before?.entry?.machineType;
      return moves && machineType ? [{ machineId: after.machineId, machineType, nodeVersion: (before?.version ?? -1) + 1, moves }] : [];
    }),
    snapshot.feedHeads,
    snapshot.now,
  );
  const shards = [...deltas].map(([ref, delta]) => {
    const before = snapshot.shards.get(ref) ?? null;
    const [org, shard] = JSON.parse(ref) as [string, number];
    const counters = movedCounters(before?.counters ?? {}, delta);
    return { before, after: { org, shard, counters, movedAt: snapshot.now, version: before?.version ?? 0 } };
  });
  const change = { orgCapacity: { nodes, shards }, history: feed.events, ...(feed.entries.length > 0 ? { capacityFeed: feed.entries } : {}) };
  return { change, deferred };
}

export interface CapacityCount {
  machines: number;
  gpus: number;
}

export interface TypeCapacity {
  gpusPerMachine: number;
  delivered: CapacityCount;
  healthy: CapacityCount;
  reserved: CapacityCount;
  inUse: CapacityCount;
  /** The org's quota of the type (Quotas), in machines and the GPUs they hold, when one is set. */
  quota?: CapacityCount;
}

export interface OrgCapacity {
  asOf: string;
  byType: Record<string, TypeCapacity>;
}

/**
 * The org's capacity from its counter shards: healthy is its fit machines whose heartbeat class is fresh now. A type
 * with a quota is shown even before anything of it is delivered.
 */
export function orgCapacity(
  shards: OrgCapacityShard[],
  quotas: Readonly<Record<string, number>>,
  gpusPerMachine: (machineType: string) => number,
  heartbeat: HeartbeatView,
  now: Date,
): OrgCapacity {
  const machines = new Map<string, Record<'delivered' | 'healthy' | 'reserved' | 'inUse', number>>();
  for (const shard of shards) {
    for (const [counter, count] of Object.entries(shard.counters)) {
      const [machineType, what, live, lastHeartbeatAt] = partsOf(counter) as [string, string, string?, string?];
      if (machineType === RESERVATION) continue;
      const counts = machines.get(machineType) ?? machines.set(machineType, { delivered: 0, healthy: 0, reserved: 0, inUse: 0 }).get(machineType)!;
      if (what === 'fit') {
        const probe = { heartbeatLive: live === 'live', ...(lastHeartbeatAt ? { lastHeartbeatAt } : {}) } as Machine;
        if (!heartbeatStale(probe, heartbeat, now)) counts.healthy += count;
      } else counts[what as 'delivered' | 'reserved' | 'inUse'] += count;
    }
  }
  for (const machineType of Object.keys(quotas)) if (!machines.has(machineType)) machines.set(machineType, { delivered: 0, healthy: 0, reserved: 0, inUse: 0 });
  const byType: Record<string, TypeCapacity> = {};
  for (const [machineType, counts] of [...machines].sort(([a], [b]) => a.localeCompare(b))) {
    const quota = quotas[machineType];
    if (counts.delivered === 0 && quota === undefined) continue;
    const gpus = gpusPerMachine(machineType);
    const count = (n: number): CapacityCount => ({ machines: n, gpus: n * gpus });
    byType[machineType] = {
      gpusPerMachine: gpus,
      delivered: count(counts.delivered),
      healthy: count(counts.healthy),
      reserved: count(counts.reserved),
      inUse: count(counts.inUse),
      ...(quota !== undefined ? { quota: count(quota) } : {}),
    };
  }
  return { asOf: now.toISOString(), byType };
}

/**
 * How long after a write the byOrg index is trusted to list it: AWS's GSIs trail their table by far less. Every node
 * write moves its org shards' counters in the same transaction, so a shard whose counters last moved longer ago than
 * this has every node it counts listed as it is.
 */
export const INDEX_SETTLE_MS = 30_000;

/** Whether a recount of the shard from its listed nodes can be trusted now (a shard not stored yet has nothing to list). */
export const settledForRecount = (shard: OrgCapacityShard | null, now: Date): boolean => ageMs(now, shard?.movedAt) >= INDEX_SETTLE_MS;

/** One org shard's counters recounted from its node items. */
function recountedCounters(org: string, nodes: CapacityNode[]): Record<string, number> {
  const delta: Record<string, number> = {};
  for (const { entry } of nodes) if (entry?.org === org) for (const key of capacityCounterKeys(entry)) delta[key] = (delta[key] ?? 0) + 1;
  return movedCounters({}, delta);
}

/**
 * The sweep's drift repair of one org shard from the nodes its index lists: the shard recounted, or null when its
 * counters agree with the recount, or moved too lately for the listing to show every node they count.
 */
export function repairedShard(org: string, shard: number, before: OrgCapacityShard | null, listed: CapacityNode[], now: Date): OrgCapacityShard | null {
  if (!settledForRecount(before, now)) return null;
  const counters = recountedCounters(org, listed);
  if (sameCounters(before?.counters ?? {}, counters)) return null;
  return { org, shard, counters, movedAt: iso(now), version: before?.version ?? 0 };
}

const sameCounters = (a: Record<string, number>, b: Record<string, number>): boolean =>
  Object.keys(movedCounters(a, Object.fromEntries(Object.entries(b).map(([key, value]) => [key, -value])))).length === 0;

// What a Change carries of this file's records (core/change.ts).
declare module '#domain/core/change.ts' {
  interface Change {
    /** Tenant orgs' capacity: machines' node items and their orgs' counter shards together. */
    orgCapacity?: { nodes: Versioned<CapacityNode>[]; shards: Versioned<OrgCapacityShard>[] };
  }
}
