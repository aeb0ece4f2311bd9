// The table's data version: the number of the last migration done (migrations/registry.ts), kept in one site item
// (DATA_VERSION_KEY below). No item: a table release 0.1.0 made, unless the table holds nothing at all.

/** Release 0.3.0's layout: the usage counters in shards, every quota dealt over them. */
export const LATEST_DATA_VERSION = 4;

/** From this version on no item is in 0.1.0's layout, and no listing reads its partitions. */
export const CONTRACTED_DATA_VERSION = 3;

export interface DataVersion {
  dataVersion: number;
  /** When the last migration finished: a contract migration waits for the releases before it to be gone. */
  updatedAt: string;
  version: number;
  /** Records are written in the layout of the release before, until the deploy is declared done (store/migrations). */
  pinned: boolean;
  /** The latest data version of the release whose deploy was last declared done. */
  declaredFor?: number;
}

/** From this version on every quota is dealt over its usage shards; before it, shard 0 alone held a quota. */
export const QUOTAS_DEALT_DATA_VERSION = 4;

/**
 * Whether records are written as the release before would, until this release's deploy is declared done: a table
 * with no data version (release 0.1.0's), one pinned by it, or one behind this release whose deploy was declared by
 * an earlier release (`declaredFor`, the data version the declaring release brought the table to).
 */
export function pinnedOf(found: Record<string, unknown> | null): boolean {
  if (!found) return true;
  if (found.pinned === true) return true;
  const dataVersion = Number(found.dataVersion);
  return dataVersion < LATEST_DATA_VERSION && Number(found.declaredFor ?? dataVersion) < LATEST_DATA_VERSION;
}

/** How long a container trusts the data version it read: the legacy reads end within this of the contract. */
export const DATA_VERSION_TTL_MS = 10_000;

/** The layout the table's items are in: the last migration done (migrations/registry.ts). */
export const DATA_VERSION_KEY = { pk: 'SITE#DATA-VERSION', sk: '#DATA-VERSION' };

/** A migration's progress, and each of its Scan segments' checkpoint beside it. */
export const migrationKeys = {
  head: (id: number) => ({ pk: `MIGRATION#${id}`, sk: '#MIGRATION' }),
  segment: (id: number, segment: number) => ({ pk: `MIGRATION#${id}`, sk: `SEGMENT#${String(segment).padStart(2, '0')}` }),
};
