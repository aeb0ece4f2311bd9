import type { Change } from '#domain/core/change.ts';
import type { DecisionWrites } from '#store/aggregate.ts';
import { aggregates } from '#store/aggregates.ts';
import { isUsageWrite } from '#store/aggregates/quota-usage-items.ts';
import { TRANSACTION_LIMIT, type ItemWrite, type TableKey } from '#store/item-access.ts';
import { checkTransactionSize } from '#store/item-size.ts';
import { inLegacyLayout, legacyTwinOf } from '#store/legacy-layout.ts';
import type { DueTimes } from '#store/port.ts';

/**
 * The writes of one decision, history included, each aggregate's in the order aggregates.ts lists them; over the
 * transaction limit is a bug, not a lost race. `legacy`: the table is pinned to release 0.1.0's layout, and each
 * record is written as that release would (legacy-layout.ts).
 */
export function writesOf(change: Change, uniqueSuffix: () => string, due: DueTimes, legacy = false): ItemWrite[] {
  const writes: ItemWrite[] = [];
  const to: DecisionWrites = {
    guarded(pair, toItem) {
      const item = toItem({ ...pair.after, version: (pair.before?.version ?? -1) + 1 });
      writes.push({ put: legacy ? inLegacyLayout(item) : item, expectedVersion: pair.before?.version ?? null });
      const twin = legacy ? legacyTwinOf(item as TableKey) : undefined;
      if (twin) writes.push({ put: { ...item, ...twin }, expectedVersion: 'any' });
    },
    created: (item) => writes.push({ put: item, expectedVersion: null }),
    usage: (write) => writes.push(write),
    uniqueSuffix,
    due,
  };
  for (const aggregate of aggregates) aggregate.writes?.(change, to);
  if (writes.length > TRANSACTION_LIMIT) throw new Error(`a change of ${writes.length} writes exceeds one transaction`);
  checkTransactionSize(writes.map((write) => (isUsageWrite(write) ? { ...write.usage.key, ...write.usage } : write.put)));
  return writes;
}
