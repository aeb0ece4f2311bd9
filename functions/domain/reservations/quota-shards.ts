import type { Change } from '#domain/core/change.ts';
import type { Instance } from '#domain/core/model.ts';
import { COUNTED, type QuotaGuard, type QuotaUsage, type UsageShard } from '#domain/reservations/quotas.ts';

// An (org, type)'s usage is counted in USAGE_SHARDS items, so that one org's concurrent creates each move one of them
// instead of all colliding on a single item. Shard 0 is the item that releases before 0.3.0 counted everything in.
//
// With a quota set, every shard holds a cap (its share of the quota), and an increment is guarded by its own shard
// alone: room under that shard's cap. Creates only ever fill a shard up to its cap, so the sum over the shards of
// max(used, cap) never grows, and it is at most the quota when the caps are dealt: together the shards can never take
// the org past its quota, however many creates commit at once. A quota whose shards other than 0 hold no cap is held
// whole by shard 0 (as releases before 0.3.0 wrote it, and as this one does while the table is pinned to one of them).
//
// The caps are dealt when the quota is set, and dealt again (rebalanced, same quota) when the room the caps leave is
// less than the room the quota leaves: after releases from shards that were over their cap when a quota was lowered.

export const USAGE_SHARDS = 8;

/** One shard's writes in a quota setting: its cap set (a number) or lifted (null), guarded by its count as read. */
export interface ShardSetting {
  shard: number;
  cap: number | null;
  /** The shard's count the caps were dealt on; absent: written whatever it counts (a quota held whole by shard 0). */
  expectUsed?: number;
}

/** A quota set, lifted or rebalanced on an (org, type)'s shards, in one transaction. */
export interface QuotaSetting {
  org: string;
  machineType: string;
  quota: number | null;
  shards: ShardSetting[];
}

declare module '#domain/core/change.ts' {
  interface Change {
    /** Quotas the provider sets (a number) or lifts (null), or dealt again over their shards, per (org, type). */
    quotas?: QuotaSetting[];
  }
}

const shardsOf = (usage: QuotaUsage): UsageShard[] =>
  usage.shards ?? [{ shard: 0, used: usage.used, ...(usage.quota === undefined ? {} : { cap: usage.quota }) }];

/** Every shard, those never written as empty ones. */
function allShards(usage: QuotaUsage): UsageShard[] {
  const stored = new Map(shardsOf(usage).map((s) => [s.shard, s]));
  return Array.from({ length: USAGE_SHARDS }, (_, shard) => stored.get(shard) ?? { shard, used: 0 });
}

/**
 * The writes that give (org, type) this quota. Dealt over every shard, each guarded by its count as read, unless the
 * table is pinned to a release that counts in shard 0 alone and no other shard has counted yet: then shard 0 holds it.
 */
export function quotaSetting(usage: QuotaUsage, quota: number | null): QuotaSetting {
  const { org, machineType } = usage;
  const othersCounted = shardsOf(usage).some((s) => s.shard !== 0);
  if (usage.shardable === false && !othersCounted) return { org, machineType, quota, shards: [{ shard: 0, cap: quota }] };
  const shards = allShards(usage);
  if (quota === null) return { org, machineType, quota, shards: shards.map(({ shard }) => ({ shard, cap: null })) };
  const room = quota - shards.reduce((sum, s) => sum + s.used, 0);
  // Over the quota already: no shard has room until releases bring the count under it and a rebalance deals it.
  if (room <= 0) return { org, machineType, quota, shards: shards.map(({ shard, used }) => ({ shard, cap: 0, expectUsed: used })) };
  const each = Math.floor(room / USAGE_SHARDS);
  const extra = room % USAGE_SHARDS;
  return { org, machineType, quota, shards: shards.map(({ shard, used }) => ({ shard, cap: used + each + (shard < extra ? 1 : 0), expectUsed: used })) };
}

/** A quota that shard 0 holds whole (as releases before 0.3.0 set every quota): no other shard has a cap. */
export const heldWhole = (usage: QuotaUsage): boolean => usage.quota !== undefined && !usage.shards?.some((s) => s.shard !== 0 && s.cap !== undefined);

/** Room the caps leave, shard by shard; with no quota, none is limited. */
const roomOf = (shard: UsageShard): number => (shard.cap === undefined ? 0 : Math.max(0, shard.cap - shard.used));

/** A quota spread over the shards whose caps leave less room than the quota does: deal them again. */
export function needsRebalance(usage: QuotaUsage | null): boolean {
  if (usage?.quota === undefined || !usage.shards?.some((s) => s.shard !== 0 && s.cap !== undefined)) return false;
  const capsRoom = usage.shards.reduce((sum, s) => sum + roomOf(s), 0);
  return capsRoom < usage.quota - usage.used;
}

const startsCounting = ({ before, after }: { before: Instance | null; after: Instance }) =>
  COUNTED.has(after.status) && !(before !== null && COUNTED.has(before.status) && before.usageUncounted !== true);

/**
 * `change` with each instance it starts counting given a shard with room (`usageShard`), and the guards of those
 * shards' increments; null when the shards have too little room for all of them (a rival took it, or a rebalance is
 * due): the caller reads the usage again. Shards are drawn at random, so concurrent creates spread over them.
 */
export function chargeQuota(change: Change, usage: QuotaUsage | null, org: string, machineType: string, random: () => number = Math.random): Change | null {
  const pairs = change.instances ?? [];
  const starting = pairs.filter(startsCounting);
  const quota = usage?.quota;
  const shards = usage ? allShards(usage) : allShards({ org, machineType, used: 0 });
  const usable = usage?.shardable === false ? shards.filter((s) => s.shard === 0) : shards;
  const room = new Map(usable.map((s) => [s.shard, quota === undefined ? Number.POSITIVE_INFINITY : roomOf(s)]));
  const charged = new Map<number, number>();
  const shardFor = new Map<Instance, number>();
  for (const pair of starting) {
    const open = [...room].filter(([, left]) => left > 0).map(([shard]) => shard);
    if (open.length === 0) return null;
    const shard = open[Math.floor(random() * open.length)]!;
    room.set(shard, room.get(shard)! - 1);
    charged.set(shard, (charged.get(shard) ?? 0) + 1);
    shardFor.set(pair.after, shard);
  }
  const capOf = (shard: number) => shards.find((s) => s.shard === shard)?.cap;
  const quotaGuards: QuotaGuard[] = [...charged.keys()].map((shard) => ({ org, machineType, shard, quota: quota === undefined ? null : capOf(shard)! }));
  return {
    ...change,
    instances: pairs.map((pair) => (shardFor.has(pair.after) ? { ...pair, after: { ...pair.after, usageShard: shardFor.get(pair.after)! } } : pair)),
    quotaGuards: [...(change.quotaGuards ?? []), ...quotaGuards],
  };
}
