import type { Catalog } from '#domain/machines/catalog.ts';
import type { SiteHeartbeat } from '#domain/machines/heartbeat.ts';
import type { Tenant } from '#domain/core/model.ts';
import type { SafetyState } from '#domain/repair/safety.ts';
import type { Aggregate, StoreCore } from '#store/aggregate.ts';
import { catalogOf, fromTenantItem, safetyOf, siteHeartbeatOf, siteKeys, tenantItem } from '#store/aggregates/site-items.ts';
import type { Item } from '#store/item-access.ts';
import { StaleWriteError } from '#store/port.ts';

/** Where the sweep's outbox fallback has looked up to (domain/events/outbox.ts), with the version it was written at. */
export interface OutboxCursor {
  through: string;
  version: number;
}

export interface SiteStore {
  getTenant(org: string): Promise<Tenant | null>;
  getCatalog(): Promise<Catalog>;
  getSafety(): Promise<SafetyState | null>;
  getSiteHeartbeat(): Promise<SiteHeartbeat | null>;
  /**
   * Take the site-wide lease `name` for `holder` until `until` (ISO): true when it was free (never taken, released,
   * or expired by `now`) and this call won it; false while another holder has it, or when a rival won the race.
   */
  takeLease(name: string, holder: string, until: string, now: string): Promise<boolean>;
  /** Hold the lease until `until` (ISO), if `holder` still has it: true when it does. */
  renewLease(name: string, holder: string, until: string): Promise<boolean>;
  /** Give the lease back, if `holder` still has it. */
  releaseLease(name: string, holder: string, now: string): Promise<void>;
  getOutboxCursor(): Promise<OutboxCursor | null>;
  /** Move the cursor on, guarded by the version read (null: none stored); a rival's move in between: StaleWriteError. */
  putOutboxCursor(before: OutboxCursor | null, through: string): Promise<void>;
}

/** The site's catalog, once the table's layout is known (a site item of 0.1.0 is copied to its key before). */
export async function readCatalog({ items, layout }: Pick<StoreCore, 'items' | 'layout'>): Promise<Catalog> {
  await layout.legacyReads();
  return catalogOf(await items.getItem(siteKeys.siteCatalog));
}

export const site: Aggregate<SiteStore> = {
  writes: (change, to) => {
    for (const pair of change.tenants ?? []) to.guarded(pair, tenantItem);
    if (change.catalog) to.guarded(change.catalog, (catalog) => ({ ...siteKeys.siteCatalog, ...catalog }));
    if (change.safety) to.guarded(change.safety, (safety) => ({ ...siteKeys.siteSafety, ...safety }));
    if (change.replacements) to.guarded(change.replacements, (replacements) => ({ ...siteKeys.siteReplacements, ...replacements }));
  },
  store: (core) => {
    const { items, layout } = core;
    /** A lease item written over the one read (by its version): a rival's write in between wins, this one does not. */
    const putLease = async (name: string, lease: { holder: string; until: string }, stored: Item | undefined): Promise<boolean> => {
      const version = stored ? Number(stored.version) : null;
      try {
        await items.writeItems([{ put: { ...siteKeys.siteLease(name), ...lease, version: (version ?? -1) + 1 }, expectedVersion: version }]);
        return true;
      } catch (error) {
        if (error instanceof StaleWriteError) return false;
        throw error;
      }
    };
    const renewLease = async (name: string, holder: string, until: string): Promise<boolean> => {
      const stored = await items.getItem(siteKeys.siteLease(name));
      return stored?.holder === holder && putLease(name, { holder, until }, stored);
    };
    return {
      async getTenant(org) {
        const item = await items.getItem(siteKeys.tenant(org));
        return item ? fromTenantItem(item) : null;
      },
      getCatalog: () => readCatalog(core),
      async getSafety() {
        await layout.legacyReads();
        return safetyOf(await items.getItem(siteKeys.siteSafety));
      },
      async getSiteHeartbeat() {
        await layout.legacyReads();
        return siteHeartbeatOf(await items.getItem(siteKeys.siteHeartbeat));
      },
      async takeLease(name, holder, until, now) {
        const stored = await items.getItem(siteKeys.siteLease(name));
        if (stored && String(stored.until) > now) return false;
        return putLease(name, { holder, until }, stored);
      },
      renewLease,
      async releaseLease(name, holder, now) {
        await renewLease(name, holder, now);
      },
      async getOutboxCursor() {
        const item = await items.getItem(siteKeys.siteOutboxCursor);
        return item ? { through: String(item.through), version: Number(item.version) } : null;
      },
      async putOutboxCursor(before, through) {
        const version = before ? before.version + 1 : 0;
        await items.writeItems([{ put: { ...siteKeys.siteOutboxCursor, through, version }, expectedVersion: before?.version ?? null }]);
      },
    };
  },
};
