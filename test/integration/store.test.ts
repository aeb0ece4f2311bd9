import { describe } from 'vitest';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import { MemoryFleetStore } from '#store/memory-store.ts';
import { storeContract } from '#test/support/store-contract.ts';
import { freshTables } from '#test/support/tables.ts';

// One contract, two implementations: what the services rely on holds on DynamoDB and in memory alike.
describe.each([
  {
    implementation: 'DynamoFleetStore',
    newStore: async () => {
      const { client, names } = await freshTables('store');
      return new DynamoFleetStore(client, names.table, dueTimes);
    },
  },
  { implementation: 'MemoryFleetStore', newStore: async () => new MemoryFleetStore(dueTimes) },
])('$implementation', ({ newStore }) => storeContract(newStore));
