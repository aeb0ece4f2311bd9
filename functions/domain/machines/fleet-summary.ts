import type { Change, Versioned } from '#domain/core/change.ts';
import { heartbeatStale, inAllocatableIndex, preventingSources, type HeartbeatView } from '#domain/core/health.ts';
import type { Machine, MachineState } from '#domain/core/model.ts';
import { lifecycleOf, type Lifecycle } from '#domain/machines/lifecycle.ts';

// Fleet counts without reading the fleet. The stream keeps, per (type, rack), one small item mapping each machine
// to a compact entry stamped with the machine's version, and per type a few shard items of counters. A machine's
// change replaces its entry only when its version is newer, and moves the counters by the exact difference between
// the old and the new entry in the same transaction: a duplicated or late stream record changes nothing.
//
// Staleness changes with time alone, so counters never hold it. They count machines by what decides staleness:
// whether the machine is in the agent's roster and its own last heartbeat time. Those times change only when the
// roster changes, so there are few distinct ones; the reader applies the heartbeat rule (domain/core/health.ts) to each.

/** What the summary keeps of one machine. */
export interface SummaryEntry {
  version: number;
  state: MachineState;
  /** Allocatable but for heartbeat staleness (the allocatable index's rule). */
  allocatable: boolean;
  /** Sources of its health overrides. */
  overrides: string[];
  /** Some override keeps it out of allocation. */
  quarantined: boolean;
  /** In the agent's latest roster. */
  live: boolean;
  lastHeartbeatAt?: string;
  nvlinkDomain?: string;
  /** The reservation holding it (the rack map outlines it); absent while none does. */
  reservation?: { id: string; org: string };
  /** Absent in an entry written before lifecycles were counted, until the machine next changes. */
  lifecycle?: Lifecycle;
}

/** One rack's machines of one type: the aggregate the stream keeps idempotent. */
export interface RackAggregate {
  machineType: string;
  rack: string;
  machines: Record<string, SummaryEntry>;
  version: number;
}

/** Counters of the racks of one type whose counter item is `shard` (`counterItemOf`); named by `counterKeys`. */
export interface SummaryShard {
  machineType: string;
  shard: number;
  counters: Record<string, number>;
  /**
   * The per NVLink domain counters, apart from the type's: the summary reads them only when asked (a site of NVL72
   * racks has a domain per 18 machines), and its usual read leaves this attribute out. Absent when not read.
   */
  domainCounters?: Record<string, number>;
  version: number;
}

/**
 * Shards per type: racks of different shards are reconciled in separate batches, which never contend for the same
 * items, and the sweep recounts one shard at a time.
 */
export const SUMMARY_SHARDS = 8;
/**
 * Counter items per shard. The counters per rack make up most of an item, so a machine's change rewrites the
 * counters of one sixty-fourth of its type's racks, not one eighth (at 10,000 machines in racks of 8: about 2.3 KB
 * instead of 18 KB).
 */
export const COUNTER_ITEMS_PER_SHARD = 8;

// A rack's counter item (and so what a shard's recount reads) follows from it: this hash must never change.
export function shardOf(rack: string): number {
  let hash = 0;
  for (const char of rack) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return hash % SUMMARY_SHARDS;
}

/**
 * FNV-1a's high bits: a second hash that spreads a shard's racks evenly over its counter items. Its low bits, like
 * the shard's, depend only on the low bits of the characters, so they would follow the shard.
 */
function spreadHash(rack: string): number {
  let hash = 0x811c9dc5;
  for (const char of rack) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193) >>> 0;
  return hash >>> 16;
}

/** The counter item a rack's machines are counted in: one of its shard's (`% SUMMARY_SHARDS` is the shard). */
export const counterItemOf = (rack: string): number => shardOf(rack) + SUMMARY_SHARDS * (spreadHash(rack) % COUNTER_ITEMS_PER_SHARD);

/** The counter items of a shard. */
export const counterItemsOfShard = (shard: number): number[] => Array.from({ length: COUNTER_ITEMS_PER_SHARD }, (_, i) => shard + i * SUMMARY_SHARDS);

export function summaryEntry(machine: Machine): SummaryEntry {
  return {
    version: machine.version,
    state: machine.state,
    allocatable: inAllocatableIndex(machine),
    overrides: [...new Set(machine.healthOverrides.map((o) => o.source))].sort(),
    quarantined: preventingSources(machine.healthOverrides).length > 0,
    live: machine.heartbeatLive,
    ...(machine.lastHeartbeatAt ? { lastHeartbeatAt: machine.lastHeartbeatAt } : {}),
    ...(machine.nvlinkDomain !== undefined ? { nvlinkDomain: machine.nvlinkDomain } : {}),
    ...(machine.reservation ? { reservation: { id: machine.reservation.id, org: machine.reservation.org } } : {}),
    lifecycle: lifecycleOf(machine),
  };
}

// Counter names: `|`-separated parts, each URI-encoded (a rack name may hold any character).
const SEP = '|';
const name = (...parts: string[]): string => parts.map(encodeURIComponent).join(SEP);
const partsOf = (counter: string): string[] => counter.split(SEP).map(decodeURIComponent);
/** A heartbeat class: roster membership and the machine's own last heartbeat time. */
const seenKey = (entry: Pick<SummaryEntry, 'live' | 'lastHeartbeatAt'>): string => name(entry.live ? 'live' : 'off', entry.lastHeartbeatAt ?? '');

/**
 * The counters one machine adds: each name by one. Per-rack detail is not counted: a rack's tally is its rack item's
 * entries (rack-tally.ts), read with the rack.
 */
export function counterKeys(entry: SummaryEntry): string[] {
  // A retired machine is no capacity: it counts under its lifecycle alone.
  if (entry.lifecycle === 'retired') return [name('lifecycle', 'retired')];
  const seen = seenKey(entry);
  const keys = [
    'machines',
    name('state', entry.state),
    ...entry.overrides.map((o) => name('override', o)),
    `seen${SEP}${seen}${SEP}machines`,
    ...(entry.lifecycle ? [name('lifecycle', entry.lifecycle)] : []),
  ];
  if (entry.allocatable) keys.push('allocatable', `seen${SEP}${seen}${SEP}allocatable`);
  const domain = entry.nvlinkDomain;
  if (domain !== undefined) {
    keys.push(name('domain', domain, 'machines'));
    if (entry.allocatable) keys.push(name('domain', domain, 'allocatable'), `${name('domainseen', domain)}${SEP}${seen}`);
    if (entry.quarantined) keys.push(name('domain', domain, 'quarantined'));
  }
  return keys;
}

/** A counter kept in a shard's `domainCounters`. */
const isDomainCounter = (counter: string): boolean => counter.startsWith(`domain${SEP}`) || counter.startsWith(`domainseen${SEP}`);

/** Counters moved by `delta`; names that reach zero are dropped, so shard items hold only what exists. */
export function applyDelta(counters: Record<string, number>, delta: Record<string, number>): Record<string, number> {
  const next = { ...counters };
  for (const [name, by] of Object.entries(delta)) {
    const value = (next[name] ?? 0) + by;
    if (value === 0) delete next[name];
    else next[name] = value;
  }
  return next;
}

/** What a shard holds, moved by `delta`: each counter in the map it belongs to. */
export function movedShardCounters(
  before: Pick<SummaryShard, 'counters' | 'domainCounters'> | null,
  delta: Record<string, number>,
): Pick<SummaryShard, 'counters' | 'domainCounters'> {
  const [domain, type] = [true, false].map((ofDomain) =>
    Object.fromEntries(Object.entries(delta).filter(([counter]) => isDomainCounter(counter) === ofDomain)),
  );
  const domainCounters = applyDelta(before?.domainCounters ?? {}, domain!);
  return { counters: applyDelta(before?.counters ?? {}, type!), ...(Object.keys(domainCounters).length > 0 ? { domainCounters } : {}) };
}

/** The counters of every entry of some racks, by counter item, as the sweep recomputes them. */
export function countersByItem(racks: RackAggregate[]): Map<number, Pick<SummaryShard, 'counters' | 'domainCounters'>> {
  const deltas = new Map<number, Record<string, number>>();
  for (const rack of racks) {
    const item = counterItemOf(rack.rack);
    const delta = deltas.get(item) ?? deltas.set(item, {}).get(item)!;
    for (const entry of Object.values(rack.machines)) for (const key of counterKeys(entry)) delta[key] = (delta[key] ?? 0) + 1;
  }
  return new Map([...deltas].map(([item, delta]) => [item, movedShardCounters(null, delta)]));
}

/** Where a machine's entry may be: a machine id, with the type and rack it is (or was) counted under. */
export interface Placement {
  machineId: string;
  machineType: string;
  rack: string;
}

/** What a batch of placements needs: the machines as they are now, and the rack and shard items they touch. */
export interface SummarySnapshot {
  placements: Placement[];
  machines: Map<string, Machine | null>;
  /** By `rackRef`; null when the rack has no item yet. */
  racks: Map<string, RackAggregate | null>;
  /** Counter items, by `shardRef` of their `counterItemOf`; null when the item does not exist yet. */
  shards: Map<string, SummaryShard | null>;
}

export const rackRef = (machineType: string, rack: string): string => JSON.stringify([machineType, rack]);
export const shardRef = (machineType: string, shard: number): string => JSON.stringify([machineType, shard]);

/**
 * The summary's part of a batch of machine changes: each placement's entry brought in line with its machine (replaced
 * when the machine there is newer, removed when the machine is no longer there), every touched rack and shard written
 * once, each shard's counters moved by the exact difference. Null when nothing is newer (duplicates, late records).
 */
export function summaryChange({ placements, machines, racks, shards }: SummarySnapshot): Change | null {
  const rackAfter = new Map<string, RackAggregate>();
  const deltas = new Map<string, Record<string, number>>();
  const move = (placement: Placement, keys: string[], by: number) => {
    const key = shardRef(placement.machineType, counterItemOf(placement.rack));
    const delta = deltas.get(key) ?? deltas.set(key, {}).get(key)!;
    for (const name of keys) delta[name] = (delta[name] ?? 0) + by;
  };
  for (const placement of placements) {
    const key = rackRef(placement.machineType, placement.rack);
    const rack = rackAfter.get(key) ?? racks.get(key) ?? null;
    const before = rack?.machines[placement.machineId];
    const machine = machines.get(placement.machineId) ?? null;
    const here = machine !== null && machine.machineType === placement.machineType && machine.rack === placement.rack;
    if (here ? before !== undefined && before.version >= machine.version : before === undefined) continue;
    const { [placement.machineId]: _replaced, ...others } = rack?.machines ?? {};
    if (before) move(placement, counterKeys(before), -1);
    const entries = here ? { ...others, [placement.machineId]: summaryEntry(machine) } : others;
    if (here) move(placement, counterKeys(entries[placement.machineId]!), 1);
    rackAfter.set(key, { machineType: placement.machineType, rack: placement.rack, machines: entries, version: rack?.version ?? 0 });
  }
  if (rackAfter.size === 0) return null;
  const shardPairs = [...deltas].map(([key, delta]) => {
    const before = shards.get(key) ?? null;
    const [machineType, shard] = JSON.parse(key) as [string, number];
    return { before, after: { machineType, shard, ...movedShardCounters(before, delta), version: before?.version ?? 0 } };
  });
  const rackPairs = [...rackAfter].map(([key, after]) => ({ before: racks.get(key) ?? null, after }));
  return { fleetSummary: { racks: rackPairs, shards: shardPairs }, history: [] };
}

/** Machines, those allocatable now, and those with an override that prevents allocation. */
export interface Tally {
  machines: number;
  allocatable: number;
  quarantined: number;
}

export interface TypeSummary {
  machines: number;
  allocatable: number;
  /** Only when asked for, and only for a type whose machines carry NVLink domains. */
  byNvlinkDomain?: Record<string, Tally>;
}

export interface FleetSummary {
  machines: number;
  allocatable: number;
  stale: number;
  byState: Record<string, number>;
  byOverride: Record<string, number>;
  byLifecycle: Record<string, number>;
  byType: Record<string, TypeSummary>;
  asOf: string;
}

/** Whether machines of a heartbeat class count as stale now: the rule of domain/core/health.ts, applied once per class. */
export function staleClass(live: boolean, lastHeartbeatAt: string | undefined, heartbeat: HeartbeatView, now: Date): boolean {
  const probe = { heartbeatLive: live, ...(lastHeartbeatAt ? { lastHeartbeatAt } : {}) } as Machine;
  return heartbeatStale(probe, heartbeat, now);
}

/**
 * The summary from the shards: counts as the machine listing shows them now. Allocatable excludes machines whose
 * heartbeat is stale (as the listing's `allocatable` does), so it is computed per heartbeat class at read time.
 * `byNvlinkDomain` is counted when the shards were read with their domain counters (`nvlinkDomains`). Counters of
 * racks, which items written before rack tallies were read from the racks still hold until the sweep recounts them,
 * are passed over.
 */
export function fleetSummary(shards: SummaryShard[], heartbeat: HeartbeatView, now: Date, { nvlinkDomains = false } = {}): FleetSummary {
  const summary: FleetSummary = {
    machines: 0,
    allocatable: 0,
    stale: 0,
    byState: {},
    byOverride: {},
    byLifecycle: {},
    byType: {},
    asOf: now.toISOString(),
  };
  const bump = (counts: Record<string, number>, key: string, by: number) => void (counts[key] = (counts[key] ?? 0) + by);
  const staleByClass = new Map<string, boolean>();
  const stale = (live: string, lastHeartbeatAt: string) => {
    const seen = name(live, lastHeartbeatAt);
    if (!staleByClass.has(seen)) staleByClass.set(seen, staleClass(live === 'live', lastHeartbeatAt, heartbeat, now));
    return staleByClass.get(seen)!;
  };
  for (const shard of shards) {
    const type = (summary.byType[shard.machineType] ??= { machines: 0, allocatable: 0 });
    const domainOf = (name: string) => ((type.byNvlinkDomain ??= {})[name] ??= { machines: 0, allocatable: 0, quarantined: 0 });
    // Items written before the domain counters had their own map hold them among the others: both are read.
    for (const [counter, count] of [...Object.entries(shard.counters), ...Object.entries(shard.domainCounters ?? {})]) {
      const parts = partsOf(counter);
      if (counter === 'machines') type.machines += count;
      else if (counter === 'allocatable') type.allocatable += count;
      else if (parts[0] === 'state') bump(summary.byState, parts[1]!, count);
      else if (parts[0] === 'override') bump(summary.byOverride, parts[1]!, count);
      else if (parts[0] === 'lifecycle') bump(summary.byLifecycle, parts[1]!, count);
      else if (parts[0] === 'seen' && stale(parts[1]!, parts[2]!)) {
        if (parts[3] === 'machines') summary.stale += count;
        else type.allocatable -= count;
      } else if (!nvlinkDomains) continue;
      else if (parts[0] === 'domain') domainOf(parts[1]!)[parts[2] as keyof Tally] += count;
      else if (parts[0] === 'domainseen' && stale(parts[2]!, parts[3]!)) domainOf(parts[1]!).allocatable -= count;
    }
  }
  for (const [name, type] of Object.entries(summary.byType)) {
    if (type.machines === 0) delete summary.byType[name];
    summary.machines += type.machines;
    summary.allocatable += type.allocatable;
  }
  return summary;
}

// What a Change carries of this file's records (core/change.ts).
declare module '#domain/core/change.ts' {
  interface Change {
    /** The fleet summary's aggregates: a rack's entries and its shard's counters together. */
    fleetSummary?: { racks: Versioned<RackAggregate>[]; shards: Versioned<SummaryShard>[] };
  }
}
