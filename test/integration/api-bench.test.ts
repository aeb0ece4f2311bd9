import { describe, expect, inject, it } from 'vitest';
import { MACHINE_TYPE, ORG, startApiBench } from '../../bench/api.ts';
import { startFloor } from '../../bench/floor.ts';

// The api bench part's two sides for a few rounds, so that what it measures keeps working between full runs (npm run
// bench): the site through its HTTP API, and the floor that does the same DynamoDB work by hand. Timings are the
// bench's to judge.

describe('bench/api.ts and bench/floor.ts for a few rounds', () => {
  it('create and release through the API and on the floor, each round timed and its DynamoDB work counted', async () => {
    const id = `t${Date.now()}`;
    const api = await startApiBench(inject('dynamoEndpoint'), id, () => {});
    const floor = await startFloor(inject('dynamoEndpoint'), id, api.tableName, MACHINE_TYPE, ORG);
    try {
      expect(floor.seeded.machines).toBeGreaterThan(0);
      for (let round = 0; round < 3; round++) {
        const site = await api.cycle();
        const bare = await floor.cycle();
        for (const ms of [site.createMs, site.releaseMs, bare.createMs, bare.releaseMs]) expect(ms).toBeGreaterThan(0);
        for (const cost of [site.create.attributed, site.release.attributed, bare.createCost, bare.releaseCost]) expect(cost.writes).toBeGreaterThan(0);
      }
    } finally {
      await floor.stop();
      await api.stop();
    }
  }, 120_000);
});
