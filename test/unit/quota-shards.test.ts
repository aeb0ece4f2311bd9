import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Change } from '#domain/core/change.ts';
import type { Instance } from '#domain/core/model.ts';
import { chargeQuota, needsRebalance, quotaSetting, USAGE_SHARDS, type QuotaSetting } from '#domain/reservations/quota-shards.ts';
import type { QuotaGuard, QuotaUsage, UsageShard } from '#domain/reservations/quotas.ts';
import { anInstance } from '#test/support/fixtures.ts';

const org = 'acme';
const machineType = 'gb200';

/** The shards as the store keeps them, with the store's rules for guards and settings (item-store.ts usageAfter). */
class Shards {
  shards = new Map<number, UsageShard>();
  quota: number | undefined;
  usage(shardable = true): QuotaUsage {
    const shards = [...this.shards.values()].map((s) => ({ ...s }));
    const used = shards.reduce((sum, s) => sum + s.used, 0);
    return { org, machineType, used, ...(this.quota === undefined ? {} : { quota: this.quota }), shards, shardable };
  }
  /** Applies a setting all or nothing; false when a shard's count moved since it was dealt on. */
  set(setting: QuotaSetting): boolean {
    if (setting.shards.some((s) => s.expectUsed !== undefined && (this.shards.get(s.shard)?.used ?? 0) !== s.expectUsed)) return false;
    for (const { shard, cap } of setting.shards) {
      const { cap: _old, ...rest } = this.shards.get(shard) ?? { shard, used: 0 };
      this.shards.set(shard, cap === null ? rest : { ...rest, cap });
    }
    this.quota = setting.quota ?? undefined;
    return true;
  }
  /** Commits a charged change all or nothing; false when a guard fails. */
  commit(change: Change): boolean {
    const guards: QuotaGuard[] = change.quotaGuards ?? [];
    const by = new Map<number, number>();
    for (const { after } of change.instances ?? []) by.set(after.usageShard ?? 0, (by.get(after.usageShard ?? 0) ?? 0) + 1);
    for (const [shard, n] of by) {
      const stored = this.shards.get(shard) ?? { shard, used: 0 };
      const guard = guards.find((g) => g.shard === shard);
      if (!guard) return false;
      if (guard.quota === null ? stored.cap !== undefined : stored.cap !== guard.quota || stored.used + n > guard.quota) return false;
    }
    for (const [shard, n] of by) {
      const stored = this.shards.get(shard) ?? { shard, used: 0 };
      this.shards.set(shard, { ...stored, used: stored.used + n });
    }
    return true;
  }
  release(shard: number) {
    const stored = this.shards.get(shard)!;
    this.shards.set(shard, { ...stored, used: stored.used - 1 });
  }
  get used() {
    return [...this.shards.values()].reduce((sum, s) => sum + s.used, 0);
  }
}

let serial = 0;
const creates = (n: number): Change => ({
  instances: Array.from({ length: n }, () => ({ before: null, after: anInstance({ id: `i-${serial++}`, org, machineType, status: 'Provisioning' }) })),
  history: [],
});

describe('quota shards', () => {
  it('deal a quota over every shard, the caps adding up to it on top of what each counts', () => {
    const usage: QuotaUsage = { org, machineType, used: 3, shards: [{ shard: 2, used: 3 }], shardable: true };
    const setting = quotaSetting(usage, 13);
    expect(setting.shards).toHaveLength(USAGE_SHARDS);
    expect(setting.shards.reduce((sum, s) => sum + s.cap! - (s.expectUsed ?? 0), 0)).toBe(10);
    expect(setting.shards.find((s) => s.shard === 2)).toMatchObject({ expectUsed: 3 });
    expect(setting.shards.every((s) => s.cap! >= s.expectUsed!)).toBe(true);
  });

  it('a quota below what the org holds leaves no shard any room; a lift takes every cap away', () => {
    const usage: QuotaUsage = { org, machineType, used: 5, shards: [{ shard: 0, used: 5, cap: 9 }], shardable: true };
    expect(quotaSetting(usage, 4).shards.every((s) => s.cap === 0)).toBe(true);
    expect(quotaSetting(usage, null).shards.map((s) => s.cap)).toEqual(Array(USAGE_SHARDS).fill(null));
  });

  it('while pinned to a release that counts in shard 0 alone, shard 0 holds the quota and takes every create', () => {
    const pinned: QuotaUsage = { org, machineType, used: 0, shards: [], shardable: false };
    expect(quotaSetting(pinned, 5).shards).toEqual([{ shard: 0, cap: 5 }]);
    const charged = chargeQuota(creates(3), pinned, org, machineType, () => 0.99)!;
    expect(charged.instances!.map((p) => p.after.usageShard)).toEqual([0, 0, 0]);
    expect(charged.quotaGuards).toEqual([{ org, machineType, shard: 0, quota: null }]);
  });

  it('without a quota, creates spread over all the shards, each guarded against a cap appearing', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const charged = chargeQuota(creates(1), null, org, machineType)!;
      seen.add(charged.instances![0]!.after.usageShard!);
      expect(charged.quotaGuards![0]!.quota).toBeNull();
    }
    expect(seen.size).toBe(USAGE_SHARDS);
  });

  it('a rebalance is due only when the caps leave less room than the quota', () => {
    const store = new Shards();
    store.set(quotaSetting(store.usage(), 8));
    expect(needsRebalance(store.usage())).toBe(false);
    for (let i = 0; i < 8; i++) expect(store.commit(chargeQuota(creates(1), store.usage(), org, machineType)!)).toBe(true);
    store.set(quotaSetting(store.usage(), 4));
    for (const shard of [...store.shards.keys()].slice(0, 6)) store.release(shard);
    expect(store.used).toBe(2);
    expect(needsRebalance(store.usage())).toBe(true);
    store.set(quotaSetting(store.usage(), 4));
    expect(needsRebalance(store.usage())).toBe(false);
    expect(chargeQuota(creates(2), store.usage(), org, machineType)).not.toBeNull();
  });

  it('creates decided on one reading, committed in any order, never take the org past its quota', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 0, max: 6 }), fc.integer({ min: 1, max: 40 }), fc.nat(), (quota, held, burst, seed) => {
        const store = new Shards();
        let draw = seed;
        const random = () => (draw = (draw * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
        store.set(quotaSetting(store.usage(), null));
        for (let i = 0; i < held; i++) store.commit(chargeQuota(creates(1), store.usage(), org, machineType, random)!);
        store.set(quotaSetting(store.usage(), quota));
        const reading = store.usage();
        const won = Array.from({ length: burst }, () => chargeQuota(creates(1), reading, org, machineType, random)).filter(
          (change) => change !== null && store.commit(change),
        ).length;
        expect(store.used).toBe(held + won);
        expect(won).toBeLessThanOrEqual(Math.max(0, quota - held));
      }),
    );
  });

  it('creates one at a time, rebalanced when due, take exactly the room the quota leaves', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constant('create' as const), fc.constant('release' as const), fc.integer({ min: 0, max: 12 })), { maxLength: 80 }),
        (steps) => {
          const store = new Shards();
          const counted: Instance[] = [];
          for (const step of steps) {
            if (typeof step === 'number') expect(store.set(quotaSetting(store.usage(), step))).toBe(true);
            else if (step === 'release' && counted.length > 0) store.release(counted.shift()!.usageShard ?? 0);
            else if (step === 'create') {
              if (needsRebalance(store.usage())) store.set(quotaSetting(store.usage(), store.quota!));
              const room = store.quota === undefined || store.used < store.quota;
              const charged = chargeQuota(creates(1), store.usage(), org, machineType);
              expect(charged !== null).toBe(room);
              if (charged) {
                expect(store.commit(charged)).toBe(true);
                counted.push(charged.instances![0]!.after);
              }
            }
          }
          expect(store.used).toBe(counted.length);
        },
      ),
    );
  });
});
