import type { SiteHeartbeat } from '#domain/machines/heartbeat.ts';
import { siteKeys } from '#store/aggregates/site-items.ts';
import { LATEST_DATA_VERSION } from '#store/data-version.ts';
import { ItemStore } from '#store/item-store.ts';
import { CURRENT_LAYOUT, TableLayout } from '#store/layout.ts';
import { MemoryItems, type MemoryStoreOptions } from '#store/memory-items.ts';
import { migrations } from '#store/migrations/registry.ts';
import type { MigrationStatus } from '#store/migrations/runner.ts';
import type { DueTimes } from '#store/port.ts';

/**
 * The store in memory, for tests and benches: every aggregate over MemoryItems, so the same items, guards and
 * listings as on DynamoDB. A memory store is born in the current layout: release 0.1.0 never wrote one.
 */
export class MemoryFleetStore extends ItemStore {
  private readonly memory: MemoryItems;

  constructor(due: DueTimes, options: MemoryStoreOptions = {}) {
    const items = new MemoryItems(options);
    super({ items, layout: new TableLayout(items, CURRENT_LAYOUT), due });
    this.memory = items;
  }

  async putSiteHeartbeat(before: SiteHeartbeat | null, after: Omit<SiteHeartbeat, 'version'>): Promise<SiteHeartbeat> {
    const version = (before?.version ?? 0) + 1;
    this.memory.update(
      siteKeys.siteHeartbeat,
      (stored) => (before ? stored?.version === before.version : stored?.version === undefined),
      (stored) => {
        const { parts: _replaced, ...kept } = stored ?? {};
        return { ...kept, ...structuredClone(after), version };
      },
    );
    return { ...after, version };
  }

  async migrationStatus(): Promise<MigrationStatus> {
    return {
      dataVersion: LATEST_DATA_VERSION,
      latest: LATEST_DATA_VERSION,
      pinned: false,
      items: migrations.map(({ id, name }) => ({ id, name, state: 'done' as const, itemsDone: 0 })),
    };
  }

  async startMigrations(): Promise<MigrationStatus> {
    return this.migrationStatus();
  }
}
