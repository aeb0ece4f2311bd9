// The table's data version: the number of the last migration done (migrations/registry.ts), kept in one site item
// (DATA_VERSION_KEY below). No item: a table release 0.1.0 made, unless the table holds nothing at all.

/** Release 0.2.0's layout, contracted: nothing is left in 0.1.0's (legacy-layout.ts). */
export const LATEST_DATA_VERSION = 3;

/** From this version on no item is in 0.1.0's layout, and no listing reads its partitions. */
export const CONTRACTED_DATA_VERSION = 3;

export interface DataVersion {
  dataVersion: number;
  /** When the last migration finished: a contract migration waits for the releases before it to be gone. */
  updatedAt: string;
  version: number;
  /** Records are written in the layout of the release before, until the deploy is declared done (store/migrations). */
  pinned: boolean;
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
