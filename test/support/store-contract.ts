import { beforeAll } from 'vitest';
import type { FleetStore } from '#store/port.ts';
import { auditAndSummaryContract } from './store-contract/audit-and-summary.ts';
import { capacityHistoryContract } from './store-contract/capacity-history.ts';
import { indexesContract } from './store-contract/indexes.ts';
import { contractKit } from './store-contract/kit.ts';
import { listingsContract } from './store-contract/listings.ts';
import { pageTokensContract } from './store-contract/page-tokens.ts';
import { quotasContract } from './store-contract/quotas.ts';
import { recordsContract } from './store-contract/records.ts';

/**
 * What every FleetStore implementation must do, as observed through the interface alone. `newStore` gives an empty
 * store each time it is called; test/integration/store.test.ts runs this against each implementation.
 */
export function storeContract(newStore: () => Promise<FleetStore>): void {
  let store: FleetStore;
  beforeAll(async () => {
    store = await newStore();
  });
  const kit = contractKit(newStore, () => store);
  recordsContract(kit);
  indexesContract(kit);
  listingsContract(kit);
  pageTokensContract(kit);
  auditAndSummaryContract(kit);
  quotasContract(kit);
  capacityHistoryContract(kit);
}
