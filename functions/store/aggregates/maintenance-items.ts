import type { Maintenance } from '#domain/maintenance/maintenance.ts';
import { dueAttributes } from '#store/aggregates/due.ts';
import { siteItem } from '#store/aggregates/site-items.ts';
import type { Item } from '#store/item-access.ts';
import { strip } from '#store/item-codec.ts';

export const maintenanceKeys = {
  maintenance: (id: string) => ({ pk: `MAINTENANCE#${id}`, sk: '#MAINTENANCE' }),
  /** The site's list of open maintenance. */
  siteOpenMaintenances: siteItem('MAINTENANCE'),
};

export const MAINTENANCE_KIND = 'MAINTENANCE';
export const maintenanceStatePartition = (state: string): string => `MAINTENANCE#${state}`;

/**
 * Every maintenance is in byKind (kind `MAINTENANCE`), newest first, and in byOrg under its state
 * (`MAINTENANCE#<state>`): each listing of `GET /admin/maintenance` is one Query. Its own `kind` (planned or
 * emergency) is stored as `maintenanceKind`, since `kind` is byKind's key.
 */
export function maintenanceItem(maintenance: Maintenance, dueAt: string | undefined): Item {
  const { kind, ...rest } = maintenance;
  const sortKey = `${maintenance.createdAt}#${maintenance.id}`;
  return {
    ...maintenanceKeys.maintenance(maintenance.id),
    entity: 'maintenance',
    kind: MAINTENANCE_KIND,
    kindSk: sortKey,
    orgPk: maintenanceStatePartition(maintenance.state),
    orgSk: sortKey,
    ...dueAttributes(maintenanceKeys.maintenance(maintenance.id).pk, dueAt),
    ...rest,
    maintenanceKind: kind,
  };
}

export function fromMaintenanceItem(item: Item): Maintenance {
  const { maintenanceKind, ...rest } = strip<Omit<Maintenance, 'kind'> & { maintenanceKind: Maintenance['kind'] }>(item);
  return { ...rest, kind: maintenanceKind };
}
