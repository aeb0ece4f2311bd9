import type { Versioned } from '#domain/core/change.ts';
import type { Instance } from '#domain/core/model.ts';
import { Rejection } from '#domain/core/rejection.ts';

// Quotas: at most `quota` machines of a type held by an org's instances at once. Each (org, type)'s usage is counted
// in shards (quota-shards.ts) whose `used` counts the org's instances in a counted status, each instance in the shard
// it was charged to (`usageShard`). No shard is read-modified-written: every change that moves an instance into or out
// of a counted status moves its shard's `used` by the same amount in its own transaction (usageMoves, applied by the
// store), so the counters can neither drift from the instances nor lose a step to a crash. An increment is guarded by
// the shard's cap it was decided against, so concurrent creates can never take an org past its quota together.

/** Instances holding (or about to hold, or still handing back) a machine: what a quota counts. */
export const COUNTED: ReadonlySet<Instance['status']> = new Set(['Provisioning', 'Ready', 'Repairing', 'Terminating']);

/** One counter shard as stored: its count, and its cap (its share of the quota) when a quota is set. */
export interface UsageShard {
  shard: number;
  used: number;
  cap?: number;
}

/** One (org, type)'s count, and its quota when the provider set one. */
export interface QuotaUsage {
  org: string;
  machineType: string;
  used: number;
  quota?: number;
  /** The shards stored, as the store reads them; absent, shard 0 holds the count (and the quota) whole. */
  shards?: UsageShard[];
  /** false while the table is pinned to a release that counts in shard 0 alone: creates count there too. */
  shardable?: boolean;
}

/** How an (org, type)'s shard's `used` moves in one change. */
export interface UsageMove {
  org: string;
  machineType: string;
  shard: number;
  by: number;
}

/**
 * What an increment of a shard was decided against: no quota (the shard must still have no cap), or this cap (the
 * shard must still have it, with room for the increment when the transaction commits).
 */
export interface QuotaGuard {
  org: string;
  machineType: string;
  shard: number;
  quota: number | null;
}

const counted = (instance: Instance | null): boolean => instance !== null && COUNTED.has(instance.status);

export const usageRef = (org: string, machineType: string, shard: number): string => JSON.stringify([org, machineType, shard]);

/** How the changed instances move their orgs' usage shards; pairs that stay counted (or uncounted) move nothing. */
export function usageMoves(instances: Versioned<Instance>[]): UsageMove[] {
  const moves = new Map<string, UsageMove>();
  for (const { before, after } of instances) {
    const by = Number(counted(after)) - Number(counted(before) && before?.usageUncounted !== true);
    if (by === 0) continue;
    const shard = after.usageShard ?? 0;
    const ref = usageRef(after.org, after.machineType, shard);
    const move = moves.get(ref) ?? moves.set(ref, { org: after.org, machineType: after.machineType, shard, by: 0 }).get(ref)!;
    move.by += by;
  }
  return [...moves.values()].filter((move) => move.by !== 0);
}

/** 409 `quota-exceeded` when taking `more` machines would take the org past its quota; nothing when it would not. */
export function checkQuota(usage: QuotaUsage | null, more: number): void {
  if (usage?.quota === undefined || usage.used + more <= usage.quota) return;
  throw quotaExceeded(usage);
}

export function quotaExceeded(usage: QuotaUsage): Rejection {
  const { org, machineType, quota, used } = usage;
  return new Rejection(409, 'quota-exceeded', `org ${org} holds ${used} of its quota of ${quota} ${machineType} machine(s)`, undefined, undefined, {
    machineType,
    quota: quota!,
    used,
  });
}

/** 422 `unsatisfiable` when a group's minimum alone is more than the org may ever hold of the type. */
export function assertWithinQuota(usage: QuotaUsage | null, minNodes: number): void {
  if (usage?.quota === undefined || minNodes <= usage.quota) return;
  throw new Rejection(422, 'unsatisfiable', `minNodes ${minNodes} is more than org ${usage.org}'s quota of ${usage.quota} ${usage.machineType} machine(s)`);
}

// What a Change carries of this file's records (core/change.ts).
declare module '#domain/core/change.ts' {
  interface Change {
    /**
     * The quotas the instances this change counts were decided against: each (org, type) whose usage it raises
     * commits only while that quota holds. The usage moves themselves follow from `instances`.
     */
    quotaGuards?: QuotaGuard[];
  }
}
