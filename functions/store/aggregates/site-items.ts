import { emptyCatalog, type Catalog } from '#domain/machines/catalog.ts';
import type { RosterParts, SiteHeartbeat } from '#domain/machines/heartbeat.ts';
import type { ReplacementsInFlight, Tenant } from '#domain/core/model.ts';
import type { SafetyState } from '#domain/repair/safety.ts';
import type { Item } from '#store/item-access.ts';
import { strip } from '#store/item-codec.ts';

/**
 * Each of the site's own items under a key of its own: they are written by different work (registration, the roster,
 * the replacement cap, the sweep's lease), and sharing one partition key would add all of their writes up on it.
 */
export const siteItem = (name: string) => ({ pk: `SITE#${name}`, sk: `#${name}` });

export const siteKeys = {
  tenant: (org: string) => ({ pk: `TENANT#${org}`, sk: '#TENANT' }),
  siteHeartbeat: siteItem('HEARTBEAT'),
  siteCatalog: siteItem('CATALOG'),
  siteSafety: siteItem('SAFETY'),
  siteReplacements: siteItem('REPLACEMENTS'),
  siteLease: (name: string) => siteItem(`LEASE#${name}`),
  /** How far the sweep's outbox fallback has looked (domain/events/outbox.ts). */
  siteOutboxCursor: siteItem('OUTBOX-CURSOR'),
};

export function tenantItem(tenant: Tenant): Item {
  return { ...siteKeys.tenant(tenant.org), entity: 'tenant', kind: 'TENANT', kindSk: tenant.org, ...tenant };
}

export const fromTenantItem = (item: Item): Tenant => strip<Tenant>(item);

export const catalogOf = (item: Item | undefined): Catalog =>
  item ? { types: item.types as Catalog['types'], version: item.version as number } : emptyCatalog();

export const siteHeartbeatOf = (item: Item | undefined): SiteHeartbeat | null =>
  item
    ? {
        rosterSeenAt: String(item.rosterSeenAt),
        machineCount: Number(item.machineCount),
        ...(item.parts ? { parts: item.parts as RosterParts } : {}),
        version: Number(item.version),
      }
    : null;

export const replacementsOf = (item: Item | undefined): ReplacementsInFlight | null =>
  item ? { instanceIds: item.instanceIds as string[], version: item.version as number } : null;

export const safetyOf = (item: Item | undefined): SafetyState | null =>
  item ? { repairStorm: item.repairStorm as SafetyState['repairStorm'], quarantines: item.quarantines as string[], version: item.version as number } : null;
