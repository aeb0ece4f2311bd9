import type { MetaInstance } from '#domain/core/model.ts';
import { siteItem } from '#store/aggregates/site-items.ts';
import { CONTRACTED_DATA_VERSION, DATA_VERSION_KEY, DATA_VERSION_TTL_MS, pinnedOf, QUOTAS_DEALT_DATA_VERSION } from '#store/data-version.ts';
import type { ItemAccess } from '#store/item-access.ts';
import { allItems } from '#store/item-reads.ts';
import { LEGACY_SITE_ITEMS, legacyMembersPartition } from '#store/legacy-layout.ts';
import { indexes } from '#store/table.ts';
import { isThrottled, retryThrottled } from '#store/throttle.ts';

// Where the table stands between release 0.1.0's layout and this one's (legacy-layout.ts, data-version.ts), and the
// reads that layout still asks for: the aggregates ask it which 0.1.0 partitions to read too, and whether to write
// records as 0.1.0 would.

/** The data version from which the site's own items are at their current keys (migrations/registry.ts, migration 1). */
const SITE_ITEMS_MIGRATED = 1;

/** How long a request waits for the read of the table's layout before it goes on without it. */
const LAYOUT_READ_BUDGET_MS = 300;

/** What the table's data version says of its layouts. */
export interface LayoutState {
  legacyReads: boolean;
  legacyWrites: boolean;
  /** Creates may count in usage shards other than 0: not while pinned to a release that counts in shard 0 alone. */
  countersShardable: boolean;
}

/** A table this release made, or a store in memory: nothing in it was ever in 0.1.0's layout. */
export const CURRENT_LAYOUT: LayoutState = { legacyReads: false, legacyWrites: false, countersShardable: true };

export class TableLayout {
  private readonly items: ItemAccess;
  private readonly fixed: LayoutState | undefined;
  private layoutRead: { at: number; state: Promise<LayoutState> } | undefined;
  private layoutKnown: LayoutState | undefined;
  /** The data version read under way, which a write that finds the layout never read waits for. */
  private reading: Promise<LayoutState> | undefined;

  /** With `fixed`, the table is known to be in that layout and its data version is never read. */
  constructor(items: ItemAccess, fixed?: LayoutState) {
    this.items = items;
    this.fixed = fixed;
  }

  /**
   * Read at most once per DATA_VERSION_TTL_MS per store. Until the contract every listing also reads 0.1.0's
   * partitions (legacy-layout.ts), and the site's own items are first copied to their current keys; while the table
   * is pinned to 0.1.0 (no data version yet, or one pinned before the contract) records are written in 0.1.0's
   * layout, so that a release 0.1.0 running beside this one, or deployed again, sees all of them.
   */
  state(): Promise<LayoutState> {
    if (this.fixed) return Promise.resolve(this.fixed);
    const now = Date.now();
    if (!this.layoutRead || now - this.layoutRead.at > DATA_VERSION_TTL_MS) {
      const read = this.readLayout();
      this.reading = read;
      // A read that throttles or lags does not hold up the request's reads: they go on as the table was last known to
      // be (or, never read yet, reading both layouts), and the next call asks again. Writes wait (legacyWrites).
      const unknown = (): LayoutState => {
        this.layoutRead = undefined;
        return this.layoutKnown ?? { legacyReads: true, legacyWrites: false, countersShardable: false };
      };
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<LayoutState>((resolve) => (timer = setTimeout(() => resolve(unknown()), LAYOUT_READ_BUDGET_MS)));
      const state = Promise.race([read.catch((error: unknown) => (isThrottled(error) ? unknown() : Promise.reject(error))), late]).finally(() =>
        clearTimeout(timer),
      );
      read.catch(() => undefined);
      state.catch(() => (this.layoutRead = undefined));
      this.layoutRead = { at: now, state };
    }
    return this.layoutRead.state;
  }

  /** The data version, read now: what it says of the layouts is known from then on. */
  private async readLayout(): Promise<LayoutState> {
    const found = await this.items.getItem(DATA_VERSION_KEY);
    const dataVersion = found ? Number(found.dataVersion) : 0;
    const legacyReads = dataVersion < CONTRACTED_DATA_VERSION;
    // Once migration 1 is done the site's items are at their own keys: no refresh copies them again.
    if (dataVersion < SITE_ITEMS_MIGRATED) await this.copyLegacySiteItems();
    const pinned = pinnedOf(found ?? null);
    this.layoutKnown = {
      legacyReads,
      legacyWrites: pinned && dataVersion < CONTRACTED_DATA_VERSION,
      countersShardable: !pinned || dataVersion >= QUOTAS_DEALT_DATA_VERSION,
    };
    return this.layoutKnown;
  }

  /** Whether listings also read 0.1.0's partitions; asked before a read of a site item too, which copies those first. */
  async legacyReads(): Promise<boolean> {
    return (await this.state()).legacyReads;
  }

  /**
   * Whether records are written as 0.1.0 would. Never a guess: a record in the wrong layout is one that one of the two
   * releases does not see. So until this store has read the data version once, a write waits for that read, however
   * late, reads it again while throttled, and fails as any write the throttles keep out (a ThrottledError, a 503 sent
   * again); reads went on without it, reading both layouts.
   */
  async legacyWrites(): Promise<boolean> {
    if (this.fixed) return this.fixed.legacyWrites;
    await this.state();
    if (this.layoutKnown) return this.layoutKnown.legacyWrites;
    const read = this.reading!.catch((error: unknown) => (isThrottled(error) ? retryThrottled(() => this.readLayout()) : Promise.reject(error)));
    return (await read).legacyWrites;
  }

  /** `fresh`: read now, not as cached, for a quota about to be dealt on what it says. */
  async countersShardable(fresh = false): Promise<boolean> {
    if (fresh) this.layoutRead = undefined;
    return (await this.state()).countersShardable;
  }

  /** The 0.1.0 partition a listing also reads while the table may hold that layout; none after the contract. */
  async legacyPartitions(partition: string): Promise<string[]> {
    return (await this.legacyReads()) ? [partition] : [];
  }

  /**
   * The site's own items, each copied from its 0.1.0 key to its current one where it is not there yet: a write
   * guarded by the version read then finds the item it read. Idempotent, and never over a newer write.
   */
  async copyLegacySiteItems(): Promise<number> {
    const found = await this.items.getItems(LEGACY_SITE_ITEMS.map((site) => site.legacy));
    let copied = 0;
    for (const item of found) {
      const site = LEGACY_SITE_ITEMS.find((s) => s.legacy.pk === item.pk && s.legacy.sk === item.sk)!;
      if (await this.items.putIfAbsent({ ...item, ...siteItem(site.name) })) copied++;
    }
    return copied;
  }

  /**
   * Meta-instances that release 0.1.0 wrote get `memberIds` from its members index (its members not yet Terminated);
   * while the table is pinned every one does, since 0.1.0 may have placed a member that `memberIds` does not name.
   */
  async withMembers(metas: MetaInstance[]): Promise<MetaInstance[]> {
    const pinned = metas.length > 0 && (await this.state()).legacyWrites;
    return Promise.all(
      metas.map(async (meta) => {
        if (Array.isArray(meta.memberIds) && !pinned) return meta;
        const members = await allItems(this.items, { index: indexes.members, partition: legacyMembersPartition(meta.id), entriesOnly: true });
        return { ...meta, memberIds: members.map((item) => String(item.id ?? String(item.pk).slice('INSTANCE#'.length))) };
      }),
    );
  }
}
