import type { Change } from '#domain/core/change.ts';
import type { UsageWrite } from '#store/aggregates/quota-usage-items.ts';
import type { Item, ItemAccess } from '#store/item-access.ts';
import type { TableLayout } from '#store/layout.ts';
import type { DueTimes } from '#store/port.ts';

// One record kind's (or a few closely bound kinds') part of the store: aggregates.ts lists them, and both adapters
// compose the same list over their own item access.

/** What an aggregate's reads and writes work on: the adapter's table primitives, the table's layout, the due rules. */
export interface StoreCore {
  items: ItemAccess;
  layout: TableLayout;
  due: DueTimes;
}

/** How an aggregate adds its records of a decision to the decision's one transaction (writes.ts). */
export interface DecisionWrites {
  /** A record written over the version it was read at (`before`), or only where none exists yet (`before` null). */
  guarded<T extends { version: number }>(pair: { before: T | null; after: T }, toItem: (record: T) => Item): void;
  /** A new item that must not exist yet: an entry whose key is unique to it. */
  created(item: Item): void;
  usage(write: UsageWrite): void;
  /** The unique part of an entry's key, so entries of the same instant do not overwrite each other. */
  uniqueSuffix(): string;
  due: DueTimes;
}

export interface Aggregate<Store extends object> {
  /** Its records' writes of a decision, if a Change carries any of them. */
  writes?: (change: Change, to: DecisionWrites) => void;
  /** Its reads, and its writes outside a decision. */
  store: (core: StoreCore) => Store;
}
