import { describe, expect, it } from 'vitest';
import { StaleWriteError } from '#store/port.ts';
import type { ContractKit } from './kit.ts';

/** The usage counters and quotas (domain/reservations/quotas.ts): moved in place by instance changes, guarded by the quota decided on. */
export function quotasContract(kit: ContractKit): void {
  const { instance, create } = kit;

  describe('quota usage', () => {
    it('moves with the instances a change counts in or out, in the same transaction, and no further', async () => {
      const org = 'q-org';
      await kit.store.commit({ quotas: [{ org, machineType: 'gb200', quota: 2 }], history: [] });
      expect(await kit.store.getQuotaUsage(org, 'gb200')).toEqual({ org, machineType: 'gb200', used: 0, quota: 2 });
      const a = instance('q-a', { org, status: 'Provisioning' });
      const b = instance('q-b', { org, status: 'Provisioning' });
      const guard = [{ org, machineType: 'gb200', quota: 2 }];
      await kit.store.commit({ instances: [create(a), create(b)], history: [], quotaGuards: guard });
      expect((await kit.store.getQuotaUsage(org, 'gb200'))!.used).toBe(2);

      // A third would take the org past its quota: the whole transaction fails, the instance is not written.
      const c = instance('q-c', { org, status: 'Provisioning' });
      expect(await kit.rejectionOf(kit.store.commit({ instances: [create(c)], history: [], quotaGuards: guard }))).toBeInstanceOf(StaleWriteError);
      expect(await kit.store.getInstance('q-c')).toBeNull();
      // Decided against no quota while there is one: refused too.
      const noQuota = [{ org, machineType: 'gb200', quota: null }];
      expect(await kit.rejectionOf(kit.store.commit({ instances: [create(c)], history: [], quotaGuards: noQuota }))).toBeInstanceOf(StaleWriteError);

      // Ready still counts; Terminated does not.
      const stored = (await kit.store.getInstance('q-a'))!;
      await kit.store.commit({ instances: [{ before: stored, after: { ...stored, status: 'Ready' } }], history: [] });
      expect((await kit.store.getQuotaUsage(org, 'gb200'))!.used).toBe(2);
      const ready = (await kit.store.getInstance('q-a'))!;
      await kit.store.commit({ instances: [{ before: ready, after: { ...ready, status: 'Terminated' } }], history: [] });
      expect((await kit.store.getQuotaUsage(org, 'gb200'))!.used).toBe(1);
      await kit.store.commit({ instances: [create(c)], history: [], quotaGuards: guard });
      expect((await kit.store.getQuotaUsage(org, 'gb200'))!.used).toBe(2);

      // Lifting the quota keeps the count; the org's types are one listing.
      await kit.store.commit({ quotas: [{ org, machineType: 'gb200', quota: null }], history: [] });
      expect(await kit.store.listQuotaUsage(org)).toEqual([{ org, machineType: 'gb200', used: 2 }]);
    });
  });
}
