import { describe, expect, inject, it } from 'vitest';
import { MACHINE_TYPE, ORG, TENANT, startApiBench } from '../../bench/api.ts';
import { startFloor } from '../../bench/floor.ts';

// The api bench part's two sides for a few rounds, so that what it measures keeps working between full runs (npm run
// bench): the site through its HTTP API, and the contract floor of each operation. Timings are the bench's to judge.

describe('bench/api.ts and bench/floor.ts for a few rounds', () => {
  it('create and release through the API and on the floor, each round timed and its DynamoDB work counted', async () => {
    const id = `t${Date.now()}`;
    const api = await startApiBench(inject('dynamoEndpoint'), id, 0, () => {});
    const floor = await startFloor({ endpoint: inject('dynamoEndpoint'), id, siteTable: api.tableName, machineType: MACHINE_TYPE, org: ORG, actor: TENANT, settleMs: 0 });
    try {
      expect(floor.seeded.machines).toBeGreaterThan(0);
      for (let round = 0; round < 3; round++) {
        const site = await api.cycle();
        const bare = await floor.cycle();
        for (const ms of [site.createMs, site.releaseMs, bare.createMs, bare.releaseMs]) expect(ms).toBeGreaterThan(0);
        for (const cost of [site.create.attributed, site.release.attributed, bare.createCost, bare.releaseCost]) expect(cost.writes).toBeGreaterThan(0);
        // The floor writes what the API writes, and only the least each operation can do by its contract.
        expect(bare.createCost.writeUnits).toBe(site.create.attributed.writeUnits);
        expect(bare.releaseCost.writeUnits).toBe(site.release.attributed.writeUnits);
        expect(bare.createCost.requests).toEqual({ QueryCommand: 1, TransactWriteItemsCommand: 1 });
        expect(bare.releaseCost.requests).toEqual({ GetItemCommand: 1, TransactWriteItemsCommand: 1 });
      }
    } finally {
      await floor.stop();
      await api.stop();
    }
  }, 120_000);
});
