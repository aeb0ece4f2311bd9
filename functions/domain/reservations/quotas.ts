import type { Versioned } from '#domain/core/change.ts';
import type { Instance } from '#domain/core/model.ts';
import { Rejection } from '#domain/core/rejection.ts';

// Quotas: at most `quota` machines of a type held by an org's instances at once. Each (org, type) has one usage
// item whose `used` counts the org's instances in a counted status. It is never read-modified-written: every change
// that moves an instance into or out of a counted status moves `used` by the same amount in its own transaction
// (usageMoves, applied by the store), so the counter can neither drift from the instances nor lose a step to a crash.
// An increment is guarded by the quota it was decided against (the item's `quota` unchanged and `used` low enough),
// so concurrent creates can never take an org past its quota together.

/** Instances holding (or about to hold, or still handing back) a machine: what a quota counts. */
export const COUNTED: ReadonlySet<Instance['status']> = new Set(['Provisioning', 'Ready', 'Repairing', 'Terminating']);

/** One (org, type)'s count, and its quota when the provider set one. */
export interface QuotaUsage {
  org: string;
  machineType: string;
  used: number;
  quota?: number;
}

/** How an (org, type)'s `used` moves in one change. */
export interface UsageMove {
  org: string;
  machineType: string;
  by: number;
}

/**
 * What an increment was decided against: no quota (the item must still have none), or this quota (the item must
 * still have it, with room for the increment when the transaction commits).
 */
export interface QuotaGuard {
  org: string;
  machineType: string;
  quota: number | null;
}

const counted = (instance: Instance | null): boolean => instance !== null && COUNTED.has(instance.status);

export const usageRef = (org: string, machineType: string): string => JSON.stringify([org, machineType]);

/** How the changed instances move their orgs' usage counters; pairs that stay counted (or uncounted) move nothing. */
export function usageMoves(instances: Versioned<Instance>[]): UsageMove[] {
  const moves = new Map<string, UsageMove>();
  for (const { before, after } of instances) {
    const by = Number(counted(after)) - Number(counted(before) && before?.usageUncounted !== true);
    if (by === 0) continue;
    const ref = usageRef(after.org, after.machineType);
    const move = moves.get(ref) ?? moves.set(ref, { org: after.org, machineType: after.machineType, by: 0 }).get(ref)!;
    move.by += by;
  }
  return [...moves.values()].filter((move) => move.by !== 0);
}

/** The guard of an increment decided on this reading of the usage item (none read: no quota). */
export const guardOf = (org: string, machineType: string, usage: QuotaUsage | null): QuotaGuard => ({ org, machineType, quota: usage?.quota ?? null });

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
