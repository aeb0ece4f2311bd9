import { describe, expect, it } from 'vitest';
import type { CapacityPoint } from '#domain/capacity/capacity-history.ts';
import { StaleWriteError } from '#store/port.ts';
import type { ContractKit } from './kit.ts';

/** Orgs' capacity points (domain/capacity/capacity-history.ts): one per org and time, read from a time on, oldest first. */
export function capacityHistoryContract(kit: ContractKit): void {
  describe('capacity history', () => {
    const point = (org: string, at: string, delivered: number): CapacityPoint => {
      const count = { machines: delivered, gpus: 4 * delivered };
      return { org, at, byType: { gb200: { delivered: count, healthy: count, reserved: count, inUse: count } } };
    };
    const at = (minute: number) => `2026-11-27T10:${String(minute).padStart(2, '0')}:00.000Z`;

    it('keeps one point per org and time, and pages an org from `since` on, oldest first', async () => {
      for (const minute of [10, 0, 5]) await kit.store.commit({ capacityPoints: [point('ch-acme', at(minute), minute)], history: [] });
      await kit.store.commit({ capacityPoints: [point('ch-globex', at(5), 1)], history: [] });
      // A second point at the same time is refused, and the first stays.
      const again = kit.store.commit({ capacityPoints: [point('ch-acme', at(5), 99)], history: [] });
      expect(await kit.rejectionOf(again)).toBeInstanceOf(StaleWriteError);

      const first = await kit.store.listCapacityPoints('ch-acme', at(5), { limit: 1 });
      expect(first.items).toEqual([point('ch-acme', at(5), 5)]);
      const second = await kit.store.listCapacityPoints('ch-acme', at(5), { limit: 1, nextToken: first.nextToken });
      expect(second.items).toEqual([point('ch-acme', at(10), 10)]);
      expect((await kit.store.listCapacityPoints('ch-acme', at(0), { limit: 10 })).items.map((p) => p.at)).toEqual([at(0), at(5), at(10)]);
      expect(await kit.store.orgsWithCapacityPoint(['ch-acme', 'ch-globex', 'ch-initech'], at(10))).toEqual(new Set(['ch-acme']));
    });
  });
}
