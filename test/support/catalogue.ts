import { catalogAfter } from '#domain/machines/catalog.ts';
import type { Machine } from '#domain/core/model.ts';
import type { FleetStore } from '#store/port.ts';

/** Adds machines' types, racks and domains to the store's catalog, as a registration does after writing them. */
export async function catalogue(store: FleetStore, machines: readonly Machine[]): Promise<void> {
  const catalog = await store.getCatalog();
  const next = catalogAfter(
    catalog,
    machines.map((after) => ({ before: null, after })),
  );
  const stored = catalog.version === 0 && Object.keys(catalog.types).length === 0 ? null : catalog;
  if (next) await store.commit({ catalog: { before: stored, after: next }, history: [] });
}
