import { describe, expect, it } from 'vitest';
import { chargeQuota, heldWhole, quotaSetting, USAGE_SHARDS } from '#domain/reservations/quota-shards.ts';
import type { Change } from '#domain/core/change.ts';
import { StaleWriteError } from '#store/port.ts';
import type { ContractKit } from './kit.ts';

/** The usage shards and quotas (domain/reservations/quota-shards.ts): moved in place by instance changes, guarded by the caps decided on. */
export function quotasContract(kit: ContractKit): void {
  const { instance, create } = kit;
  const type = 'gb200';
  const setQuota = async (org: string, quota: number | null) =>
    kit.store.commit({ quotas: [quotaSetting(await kit.store.getQuotaUsage(org, type, { fresh: true }), quota)], history: [] });
  const charged = async (org: string, change: Change) => chargeQuota(change, await kit.store.getQuotaUsage(org, type), org, type);

  describe('quota usage', () => {
    it('moves with the instances a change counts in or out, each in its own shard, and no further', async () => {
      const org = 'q-org';
      await setQuota(org, 2);
      const set = await kit.store.getQuotaUsage(org, type);
      expect({ used: set.used, quota: set.quota, shards: set.shards!.length }).toEqual({ used: 0, quota: 2, shards: USAGE_SHARDS });
      expect(set.shards!.reduce((sum, s) => sum + s.cap!, 0)).toBe(2);

      const a = instance('q-a', { org, status: 'Provisioning' });
      const b = instance('q-b', { org, status: 'Provisioning' });
      const both = (await charged(org, { instances: [create(a), create(b)], history: [] }))!;
      await kit.store.commit(both);
      expect((await kit.store.getQuotaUsage(org, type)).used).toBe(2);
      const shardOfA = (await kit.store.getInstance('q-a'))!.usageShard;
      expect(shardOfA).toBe(both.instances![0]!.after.usageShard);

      // A third would take the org past its quota: no shard has room, and a guard on a full shard fails whole.
      const c = instance('q-c', { org, status: 'Provisioning' });
      expect(await charged(org, { instances: [create(c)], history: [] })).toBeNull();
      const full = [{ org, machineType: type, shard: shardOfA!, quota: set.shards!.find((s) => s.shard === shardOfA)!.cap! }];
      const overFull = { instances: [create({ ...c, usageShard: shardOfA! })], history: [], quotaGuards: full };
      expect(await kit.rejectionOf(kit.store.commit(overFull))).toBeInstanceOf(StaleWriteError);
      expect(await kit.store.getInstance('q-c')).toBeNull();
      // Decided against no quota while there is one: refused too.
      const noQuota = { ...overFull, quotaGuards: [{ ...full[0]!, quota: null }] };
      expect(await kit.rejectionOf(kit.store.commit(noQuota))).toBeInstanceOf(StaleWriteError);

      // Ready still counts; Terminated does not, and gives its own shard its room back.
      const stored = (await kit.store.getInstance('q-a'))!;
      await kit.store.commit({ instances: [{ before: stored, after: { ...stored, status: 'Ready' } }], history: [] });
      expect((await kit.store.getQuotaUsage(org, type)).used).toBe(2);
      const ready = (await kit.store.getInstance('q-a'))!;
      await kit.store.commit({ instances: [{ before: ready, after: { ...ready, status: 'Terminated' } }], history: [] });
      const after = await kit.store.getQuotaUsage(org, type);
      expect(after.used).toBe(1);
      expect(after.shards!.find((s) => s.shard === shardOfA)!.used).toBe(Number(both.instances![1]!.after.usageShard === shardOfA));
      await kit.store.commit((await charged(org, { instances: [create(c)], history: [] }))!);
      expect((await kit.store.getQuotaUsage(org, type)).used).toBe(2);

      // Lifting the quota keeps the count; the org's types are one listing.
      await setQuota(org, null);
      expect((await kit.store.listQuotaUsage(org)).map(({ machineType, used, quota }) => ({ machineType, used, quota }))).toEqual([
        { machineType: type, used: 2, quota: undefined },
      ]);
    });

    it('deals a quota again only on the counts it was dealt on', async () => {
      const org = 'q-deal';
      const before = await kit.store.getQuotaUsage(org, type);
      await kit.store.commit((await charged(org, { instances: [create(instance('q-d1', { org, status: 'Provisioning' }))], history: [] }))!);
      // Dealt on a count a create has moved since: the transaction fails whole and no cap is written.
      const stale = quotaSetting(before, 4);
      expect(await kit.rejectionOf(kit.store.commit({ quotas: [stale], history: [] }))).toBeInstanceOf(StaleWriteError);
      expect((await kit.store.getQuotaUsage(org, type)).quota).toBeUndefined();
      await setQuota(org, 4);
      const dealt = await kit.store.getQuotaUsage(org, type);
      expect({ used: dealt.used, quota: dealt.quota }).toEqual({ used: 1, quota: 4 });
      expect(dealt.shards!.reduce((sum, s) => sum + Math.max(s.used, s.cap!), 0)).toBe(4);
    });

    it('holds a quota whole in shard 0 while pinned to a release that counts there alone, until it is dealt', async () => {
      const org = 'q-held';
      const held = quotaSetting({ org, machineType: type, used: 0, shards: [], shardable: false }, 3);
      expect(held.shards).toEqual([{ shard: 0, cap: 3 }]);
      await kit.store.commit({ quotas: [held], history: [] });
      const whole = await kit.store.getQuotaUsage(org, type);
      expect({ quota: whole.quota, shards: whole.shards }).toEqual({ quota: 3, shards: [{ shard: 0, used: 0, cap: 3 }] });
      // Creates decided on it count in shard 0 alone, whatever they draw.
      const one = (await charged(org, { instances: [create(instance('q-h1', { org, status: 'Provisioning' }))], history: [] }))!;
      expect(one.instances![0]!.after.usageShard).toBe(0);
      await kit.store.commit(one);
      expect(heldWhole(await kit.store.getQuotaUsage(org, type))).toBe(true);
      // Migration 4 deals it as a quota set by this release would be.
      await kit.store.commit({ quotas: [quotaSetting({ ...(await kit.store.getQuotaUsage(org, type)), shardable: true }, 3)], history: [] });
      const dealt = await kit.store.getQuotaUsage(org, type);
      expect({ used: dealt.used, quota: dealt.quota, shards: dealt.shards!.length }).toEqual({ used: 1, quota: 3, shards: USAGE_SHARDS });
      expect(heldWhole(dealt)).toBe(false);
    });
  });
}
