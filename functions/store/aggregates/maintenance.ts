import type { Maintenance, MaintenanceState, OpenMaintenances } from '#domain/maintenance/maintenance.ts';
import type { Aggregate } from '#store/aggregate.ts';
import { fromMaintenanceItem, MAINTENANCE_KIND, maintenanceItem, maintenanceKeys, maintenanceStatePartition } from '#store/aggregates/maintenance-items.ts';
import type { Page } from '#store/paging.ts';
import type { PageRequest } from '#store/port.ts';
import { indexes } from '#store/table.ts';

export interface MaintenanceStore {
  /** Maintenance records by id (BatchGetItem, strongly consistent); those not found are left out. */
  getMaintenances(ids: readonly string[]): Promise<Map<string, Maintenance>>;
  /** The site's list of open maintenance (null before the first declaration). */
  getOpenMaintenances(): Promise<OpenMaintenances | null>;
  /** Every maintenance, newest first; with `state`, of that state only (a filter: a page may come back short). */
  listMaintenances(page: PageRequest & { state?: MaintenanceState | undefined }): Promise<Page<Maintenance>>;
}

export const maintenance: Aggregate<MaintenanceStore> = {
  writes: (change, to) => {
    for (const pair of change.maintenances ?? []) to.guarded(pair, (record) => maintenanceItem(record, to.due.maintenance(record)));
    if (change.openMaintenances) to.guarded(change.openMaintenances, (open) => ({ ...maintenanceKeys.siteOpenMaintenances, ...open }));
  },
  store: ({ items }) => ({
    async getMaintenances(ids) {
      const found = await items.getItems([...new Set(ids)].map(maintenanceKeys.maintenance));
      return new Map(found.map((item) => [String(item.id), fromMaintenanceItem(item)]));
    },
    async getOpenMaintenances() {
      const item = await items.getItem(maintenanceKeys.siteOpenMaintenances);
      return item ? { ids: item.ids as string[], version: Number(item.version) } : null;
    },
    async listMaintenances(page) {
      const [index, partition] = page.state ? [indexes.byOrg, maintenanceStatePartition(page.state)] : [indexes.byKind, MAINTENANCE_KIND];
      const result = await items.queryItems({ index, partition, descending: true, limit: page.limit }, page.nextToken);
      return { items: result.items.map(fromMaintenanceItem), nextToken: result.nextToken };
    },
  }),
};
