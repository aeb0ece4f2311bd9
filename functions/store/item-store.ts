import type { Change } from '#domain/core/change.ts';
import type { SiteHeartbeat } from '#domain/machines/heartbeat.ts';
import type { StoreCore } from '#store/aggregate.ts';
import { aggregates, type AggregateStores } from '#store/aggregates.ts';
import type { ItemAccess } from '#store/item-access.ts';
import type { TableLayout } from '#store/layout.ts';
import type { MigrationStatus } from '#store/migrations/runner.ts';
import type { DueTimes, FleetStore } from '#store/port.ts';
import { writesOf } from '#store/writes.ts';

/** The listed aggregates' stores over one item access, as one object: the base both adapters extend. */
const AggregateStoresOver = class {
  constructor(core: StoreCore) {
    for (const aggregate of aggregates) Object.assign(this, aggregate.store(core));
  }
} as new (
  core: StoreCore,
) => AggregateStores;

/** The store over an adapter's item access: every aggregate, and a decision's commit across them. */
export abstract class ItemStore extends AggregateStoresOver implements FleetStore {
  protected readonly items: ItemAccess;
  protected readonly layout: TableLayout;
  /** The reconcilers' due rules, for the due index (see DueTimes). */
  protected readonly due: DueTimes;

  constructor(core: StoreCore) {
    super(core);
    this.items = core.items;
    this.layout = core.layout;
    this.due = core.due;
  }

  abstract putSiteHeartbeat(before: SiteHeartbeat | null, after: Omit<SiteHeartbeat, 'version'>): Promise<SiteHeartbeat>;
  abstract migrationStatus(): Promise<MigrationStatus>;
  abstract startMigrations(): Promise<MigrationStatus>;

  async commit(change: Change): Promise<void> {
    const writes = writesOf(change, () => this.items.historySuffix(), this.due, await this.layout.legacyWrites());
    if (writes.length > 0) await this.items.writeItems(writes);
  }
}
