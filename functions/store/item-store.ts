import { quotaShardRange, quotaUsagesOf } from '#store/quota-usage-items.ts';
import { isThrottled } from '#store/throttle.ts';
import type { AuditEntry } from '#domain/events/audit.ts';
import type { Catalog } from '#domain/machines/catalog.ts';
import { catalogRacks, emptyCatalog, typeRacks } from '#domain/machines/catalog.ts';
import { MAX_TRANSACTION_ITEMS, type Change } from '#domain/core/change.ts';
import { checkTransactionSize } from '#store/item-size.ts';
import { usageMoves, usageRef, type QuotaUsage } from '#domain/reservations/quotas.ts';
import { quotaSetting } from '#domain/reservations/quota-shards.ts';
import type { RosterBucket, RosterDigests, RosterParts, SiteHeartbeat, StaleCheck } from '#domain/machines/heartbeat.ts';
import type { HistoryEntry, Instance, Machine, MetaInstance, ReplacementsInFlight, Tenant } from '#domain/core/model.ts';
import { COUNTER_ITEMS_PER_SHARD, shardOf, SUMMARY_SHARDS, type RackAggregate, type SummaryShard } from '#domain/machines/fleet-summary.ts';
import type { Maintenance, MaintenanceState, OpenMaintenances } from '#domain/maintenance/maintenance.ts';
import type { SafetyState } from '#domain/repair/safety.ts';
import {
  AUDIT_KIND,
  eventDayPartition,
  reportPartition,
  duePartitions,
  allocatableDomainPrefix,
  auditActorPartition,
  auditItem,
  auditTargetPartition,
  REPAIR_PARTITION,
  dueEntryOf,
  eventDeliveryItem,
  fromAuditItem,
  fromHistoryItem,
  fromInstanceItem,
  fromMachineItem,
  fromMetaInstanceItem,
  fromRosterBucketItem,
  fromRackAggregateItem,
  fromSummaryShardItem,
  fromTenantItem,
  historyItem,
  instanceItem,
  keys,
  siteItem,
  machineItem,
  metaInstanceItem,
  rosterBucketItem,
  rosterDigestsItem,
  siteHistoryItem,
  staleCheckItem,
  fromStaleCheckItem,
  rackAggregateItem,
  summaryShardItem,
  tenantItem,
  machineIdOfKey,
  positionedOutboxEntryOf,
  MAINTENANCE_KIND,
  maintenanceItem,
  maintenanceStatePartition,
  fromMaintenanceItem,
  quotaPartition,
  allocatableDomainPartition,
  allocatablePartition,
  allocatableSortKey,
  fromReservationItem,
  RESERVATION_KIND,
  reservationItem,
  reservationsOfOrg,
  reservedPoolPartition,
  machineKind,
  instanceListing,
  listingPartitions,
  META_LISTING,
} from '#store/items.ts';
import type { Reservation } from '#domain/reservations/reservations.ts';
import type { OutboxWindow } from '#domain/events/outbox.ts';
import {
  decodeMergedPageToken,
  decodePageToken,
  decodeSequencePageToken,
  encodeMergedPageToken,
  encodePageToken,
  encodeSequencePageToken,
  invalidPageToken,
  type Listing,
  type Page,
  type PartitionCursor,
} from '#store/paging.ts';
import {
  StaleWriteError,
  type AllocatablePage,
  type AuditFilter,
  type CapacityItemIds,
  type CapacityItems,
  type DueEntry,
  type DueTimes,
  type FleetStore,
  type OutboxCursor,
  type PageRequest,
  type PositionedOutboxEntry,
  type RecordIds,
  type Records,
} from '#store/port.ts';
import { indexes } from '#store/table.ts';
import {
  capacityHistoryPartition,
  capacityKeys,
  capacityNodeItem,
  capacityFeedItem,
  feedSk,
  fromCapacityFeedItem,
  capacityPointItem,
  fromCapacityNodeItem,
  fromCapacityPointItem,
  fromOrgCapacityShardItem,
  orgCapacityKinds,
  orgCapacityShardItem,
} from '#store/capacity-items.ts';
import type { CapacityPoint } from '#domain/capacity/capacity-history.ts';
import { ORG_CAPACITY_SHARDS, type CapacityNode, type OrgCapacityShard } from '#domain/capacity/org-capacity.ts';
import type { MigrationStatus } from '#store/migrations/runner.ts';
import { DATA_VERSION_KEY, CONTRACTED_DATA_VERSION, DATA_VERSION_TTL_MS, pinnedOf, QUOTAS_DEALT_DATA_VERSION } from '#store/data-version.ts';
import {
  inLegacyLayout,
  legacyTwinOf,
  LEGACY_DUE_PARTITION,
  LEGACY_MACHINE_KIND,
  LEGACY_META_KIND,
  LEGACY_SITE_ITEMS,
  legacyAllocatablePartition,
  legacyInstanceListing,
  legacyMembersPartition,
} from '#store/legacy-layout.ts';
import type { CapacityFeedEntry } from '#domain/capacity/capacity-events.ts';

// What both implementations share: which item each record becomes, which index each listing reads and how, and
// which writes a decision turns into. An implementation only supplies the table primitives (get, query, count,
// transactional write), so the rules of the sparse indexes and of the guards cannot drift between them.

export type Item = Record<string, unknown>;
export type TableKey = { pk: string; sk: string };

/** The data version from which the site's own items are at their current keys (migrations/registry.ts, migration 1). */
const SITE_ITEMS_MIGRATED = 1;

/** How long a request waits for the read of the table's layout before it goes on without it. */
const LAYOUT_READ_BUDGET_MS = 300;

/** What the table's data version says of its layouts (data-version.ts). */
interface LayoutState {
  legacyReads: boolean;
  legacyWrites: boolean;
  /** Creates may count in usage shards other than 0: not while pinned to a release that counts in shard 0 alone. */
  countersShardable: boolean;
}

/** An item's table key as one string, to find the items a batch read returned (in no order) by the keys asked for. */
export const tableKeyOf = (item: Record<string, unknown>): string => `${String(item.pk)}|${String(item.sk)}`;
export type IndexDefinition = (typeof indexes)[keyof typeof indexes];

/** A DynamoDB key condition on the sort key. */
export type SortCondition = { between: [string, string] } | { atMost: string } | { atLeast: string } | { beginsWith: string };

/** One Query, described independently of how it is run. */
export interface ItemQuery {
  /** A GSI of table.ts; absent: the table itself (pk, sk). */
  index?: IndexDefinition;
  partition: string;
  sort?: SortCondition;
  /** Sort key descending (ScanIndexForward false). */
  descending?: boolean;
  limit?: number;
  /** A filter applied after Limit, as DynamoDB does: a page may come back short, even empty, with a nextToken. */
  where?: { attribute: string; equals: string };
  /** Strongly consistent (the table only; GSIs cannot be). */
  consistent?: boolean;
  /** The index entries as they are, not the items they name: of a KEYS_ONLY index, keys only, and no read of the table. */
  entriesOnly?: boolean;
  /** Only these attributes of each item (and its keys): a read that leaves out a large attribute it has no use for. */
  attributes?: readonly string[];
}

/** How a batch read reads: strongly consistent unless told, whole items unless attributes are named. */
export interface ItemRead {
  consistent?: boolean;
  attributes?: readonly string[] | undefined;
}

export interface ItemPage {
  items: Item[];
  nextToken?: string | undefined;
}

/**
 * A record written whole, guarded by the version it was read at or by not existing yet; `any`: unguarded, a mirror
 * of a guarded write in the same transaction (a site item's 0.1.0 twin, see legacy-layout.ts).
 */
export type GuardedPut = { put: Item; expectedVersion: number | null | 'any' };
/**
 * An (org, type)'s usage shard moved by `by` without reading it (domain/reservations/quotas.ts), or its cap set (a number) or
 * lifted (null), with shard 0's `quotaTotal` beside it. `guard` is the cap an increment was decided against: null,
 * the shard must have no cap; a number, the shard must still have that cap and room for `by` under it. `expectUsed`:
 * the count the caps were dealt on, which the shard must still hold.
 */
export type UsageWrite = {
  usage: {
    key: TableKey;
    org: string;
    machineType: string;
    shard: number;
    by: number;
    guard?: number | null;
    setQuota?: number | null;
    setTotal?: number | null;
    expectUsed?: number;
  };
};
export type ItemWrite = GuardedPut | UsageWrite;

export const isUsageWrite = (write: ItemWrite): write is UsageWrite => 'usage' in write;

/** The item a usage write leaves, given the item as it is (undefined when there is none yet), or null when its guard fails. */
export function usageAfter(write: UsageWrite['usage'], stored: Item | undefined): Item | null {
  const used = Number(stored?.used ?? 0);
  const quota = typeof stored?.quota === 'number' ? stored.quota : undefined;
  if (write.guard === null && quota !== undefined) return null;
  if (typeof write.guard === 'number' && (quota !== write.guard || used + write.by > write.guard)) return null;
  if (write.expectUsed !== undefined && used !== write.expectUsed) return null;
  const { org, machineType, shard } = write;
  const after: Item = { ...(stored ?? {}), ...write.key, entity: 'quota-usage', org, machineType, ...(shard === 0 ? {} : { shard }), used: used + write.by };
  if (write.setQuota === null) delete after.quota;
  else if (write.setQuota !== undefined) after.quota = write.setQuota;
  if (write.setTotal === null) delete after.quotaTotal;
  else if (write.setTotal !== undefined) after.quotaTotal = write.setTotal;
  return after;
}

export const TRANSACTION_LIMIT = MAX_TRANSACTION_ITEMS;

/** What a page token of this query is bound to: the index, the partition, and whatever else shapes its pages. */
export const listingOf = (query: ItemQuery): Listing => ({
  index: query.index ? (query.index.name as Listing['index']) : 'table',
  partition: query.partition,
  scope: [query.sort ?? null, query.descending ?? false, query.where ?? null],
});

/** The key attributes of a query's table or index, in the order DynamoDB reports them in LastEvaluatedKey. */
export const keyAttributesOf = (query: Pick<ItemQuery, 'index'>): string[] => (query.index ? ['pk', 'sk', query.index.pk, query.index.sk] : ['pk', 'sk']);

export const sortAttributeOf = (query: Pick<ItemQuery, 'index'>): string => query.index?.sk ?? 'sk';
export const partitionAttributeOf = (query: Pick<ItemQuery, 'index'>): string => query.index?.pk ?? 'pk';

/** Order within the query's partition: by its sort key, ties by the table key; descending when asked. */
export function compareByQuery(query: Pick<ItemQuery, 'index' | 'descending'>, a: Item, b: Item): number {
  const sort = sortAttributeOf(query);
  const ascending = compareStrings(a[sort], b[sort]) || compareStrings(a.pk, b.pk) || compareStrings(a.sk, b.sk);
  return query.descending ? -ascending : ascending;
}

const compareStrings = (a: unknown, b: unknown): number => (String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0);

/**
 * The writes of one decision, history included; over the transaction limit is a bug, not a lost race. `legacy`: the
 * table is pinned to release 0.1.0's layout, and each record is written as that release would (legacy-layout.ts).
 */
export function writesOf(change: Change, uniqueSuffix: () => string, due: DueTimes, legacy = false): ItemWrite[] {
  const writes: ItemWrite[] = [];
  const guarded = <T extends { version: number }>(pair: { before: T | null; after: T }, toItem: (record: T) => Item) => {
    const item = toItem({ ...pair.after, version: (pair.before?.version ?? -1) + 1 });
    writes.push({ put: legacy ? inLegacyLayout(item) : item, expectedVersion: pair.before?.version ?? null });
    const twin = legacy ? legacyTwinOf(item as TableKey) : undefined;
    if (twin) writes.push({ put: { ...item, ...twin }, expectedVersion: 'any' });
  };
  for (const pair of change.machines ?? []) guarded(pair, (machine) => machineItem(machine, due.machine(machine)));
  for (const pair of change.instances ?? []) guarded(pair, (instance) => instanceItem(instance, due.instance(instance)));
  for (const pair of change.tenants ?? []) guarded(pair, tenantItem);
  for (const pair of change.metaInstances ?? []) guarded(pair, (meta) => metaInstanceItem(meta, due.metaInstance(meta)));
  if (change.catalog) guarded(change.catalog, (catalog) => ({ ...keys.siteCatalog, ...catalog }));
  if (change.safety) guarded(change.safety, (safety) => ({ ...keys.siteSafety, ...safety }));
  if (change.replacements) guarded(change.replacements, (replacements) => ({ ...keys.siteReplacements, ...replacements }));
  for (const pair of change.rosterBuckets ?? []) guarded(pair, (bucket) => rosterBucketItem(bucket, due.rosterBucket(bucket)));
  if (change.rosterDigests) guarded(change.rosterDigests, rosterDigestsItem);
  for (const pair of change.staleChecks ?? []) guarded(pair, staleCheckItem);
  for (const pair of change.maintenances ?? []) guarded(pair, (maintenance) => maintenanceItem(maintenance, due.maintenance(maintenance)));
  for (const pair of change.reservations ?? []) guarded(pair, (reservation) => reservationItem(reservation, due.reservation(reservation)));
  if (change.openMaintenances) guarded(change.openMaintenances, (open) => ({ ...keys.siteOpenMaintenances, ...open }));
  for (const pair of change.fleetSummary?.racks ?? []) guarded(pair, rackAggregateItem);
  for (const pair of change.fleetSummary?.shards ?? []) guarded(pair, summaryShardItem);
  for (const pair of change.orgCapacity?.nodes ?? []) guarded(pair, capacityNodeItem);
  for (const pair of change.orgCapacity?.shards ?? []) guarded(pair, orgCapacityShardItem);
  for (const entry of change.capacityFeed ?? []) writes.push({ put: capacityFeedItem(entry), expectedVersion: null });
  for (const entry of change.history) writes.push({ put: historyItem(entry, uniqueSuffix()), expectedVersion: null });
  if (change.audit) writes.push({ put: auditItem(change.audit, uniqueSuffix()), expectedVersion: null });
  for (const entry of change.siteHistory ?? []) writes.push({ put: siteHistoryItem(entry), expectedVersion: null });
  for (const point of change.capacityPoints ?? []) writes.push({ put: capacityPointItem(point), expectedVersion: null });
  const guards = new Map((change.quotaGuards ?? []).map((g) => [usageRef(g.org, g.machineType, g.shard), g.quota]));
  for (const move of usageMoves(change.instances ?? [])) {
    const guard = move.by > 0 ? guards.get(usageRef(move.org, move.machineType, move.shard)) : undefined;
    writes.push({ usage: { key: keys.quotaUsage(move.org, move.machineType, move.shard), ...move, ...(guard === undefined ? {} : { guard }) } });
  }
  for (const { org, machineType, quota, shards } of change.quotas ?? []) {
    // Shard 0 names the total once the quota is dealt over the shards; held whole by shard 0, its cap is the total.
    const total = shards.length > 1 ? quota : null;
    for (const { shard, cap, expectUsed } of shards) {
      const setting = { setQuota: cap, ...(shard === 0 ? { setTotal: total } : {}), ...(expectUsed === undefined ? {} : { expectUsed }) };
      writes.push({ usage: { key: keys.quotaUsage(org, machineType, shard), org, machineType, shard, by: 0, ...setting } });
    }
  }
  if (writes.length > TRANSACTION_LIMIT) throw new Error(`a change of ${writes.length} writes exceeds one transaction`);
  checkTransactionSize(writes.map((write) => (isUsageWrite(write) ? { ...write.usage.key, ...write.usage } : write.put)));
  return writes;
}

/** Racks a page of the fleet summary's racks reads: one BatchGetItem's keys, whatever the page's limit. */
const RACKS_PER_PAGE = 100;

/** Rack partitions (of byKind's machines, of the allocatable index) read at once. */
const RACKS_AT_ONCE = 16;
/**
 * Partitions a page of a listing across partitions reads when its limit is smaller (two rounds): a page in a sparse
 * stretch comes back short with a token instead of reading on through every rack of a type.
 */
const PARTITIONS_PER_PAGE = 2 * RACKS_AT_ONCE;

/** The page token of a query that stopped after `last`. */
const lastKeyToken = (query: ItemQuery, last: Item): string | null =>
  encodePageToken(listingOf(query), Object.fromEntries(keyAttributesOf(query).map((name) => [name, last[name]]))) ?? null;

/** What a partition read to its end gives. */
const NOTHING_LEFT: ItemPage = { items: [] };

const catalogOf = (item: Item | undefined): Catalog => (item ? { types: item.types as Catalog['types'], version: item.version as number } : emptyCatalog());

const siteHeartbeatOf = (item: Item | undefined): SiteHeartbeat | null =>
  item
    ? {
        rosterSeenAt: String(item.rosterSeenAt),
        machineCount: Number(item.machineCount),
        ...(item.parts ? { parts: item.parts as RosterParts } : {}),
        version: Number(item.version),
      }
    : null;

const replacementsOf = (item: Item | undefined): ReplacementsInFlight | null =>
  item ? { instanceIds: item.instanceIds as string[], version: item.version as number } : null;

const safetyOf = (item: Item | undefined): SafetyState | null =>
  item ? { repairStorm: item.repairStorm as SafetyState['repairStorm'], quarantines: item.quarantines as string[], version: item.version as number } : null;

/** The table primitives an implementation provides; everything else is shared. */
export abstract class ItemStore implements FleetStore {
  /** The reconcilers' due rules, for the due index (see DueTimes). */
  protected readonly due: DueTimes;
  constructor(due: DueTimes) {
    this.due = due;
  }
  protected abstract getItem(key: TableKey): Promise<Item | undefined>;
  /** Strongly consistent; in no particular order; keys not found are left out; only `attributes` (and keys) when named. */
  protected abstract getItems(keys: TableKey[], read?: ItemRead): Promise<Item[]>;
  protected abstract queryItems(query: ItemQuery, nextToken?: string): Promise<ItemPage>;
  protected abstract countItems(query: ItemQuery): Promise<number>;
  /** All or nothing; a failed guard raises StaleWriteError. */
  protected abstract writeItems(writes: ItemWrite[]): Promise<void>;
  /** Unguarded puts in batches; not all or nothing. */
  protected abstract putItems(items: Item[]): Promise<void>;
  abstract putSiteHeartbeat(before: SiteHeartbeat | null, after: Omit<SiteHeartbeat, 'version'>): Promise<SiteHeartbeat>;
  /** The unique part of a history or audit entry's sort key, so entries at the same instant do not overwrite each other. */
  protected abstract historySuffix(): string;
  abstract migrationStatus(): Promise<MigrationStatus>;
  abstract startMigrations(): Promise<MigrationStatus>;
  /** Writes `item` unless an item with its key exists; false when one did. */
  protected abstract putIfAbsent(item: Item): Promise<boolean>;

  private layoutRead: { at: number; state: Promise<LayoutState> } | undefined;
  private layoutKnown: LayoutState | undefined;

  /**
   * Where the table stands between the layouts: read at most once per DATA_VERSION_TTL_MS per store. Until the
   * contract every listing also reads 0.1.0's partitions (legacy-layout.ts), and the site's own items are first copied
   * to their current keys; while the table is pinned (no data version yet, or one still pinned) records are written
   * in 0.1.0's layout, so that a release 0.1.0 running beside this one, or deployed again, sees all of them.
   */
  protected layoutState(): Promise<LayoutState> {
    const now = Date.now();
    if (!this.layoutRead || now - this.layoutRead.at > DATA_VERSION_TTL_MS) {
      const known = this.layoutKnown;
      const read = this.getItem(DATA_VERSION_KEY).then(async (found): Promise<LayoutState> => {
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
      });
      // A read that throttles or lags does not hold up the request: it goes on as the table was last known to be (or,
      // never read yet, reading both layouts and writing this release's), and the next call asks again.
      const unknown = (): LayoutState => {
        this.layoutRead = undefined;
        return known ?? { legacyReads: true, legacyWrites: false, countersShardable: false };
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

  protected async legacyLayout(): Promise<boolean> {
    return (await this.layoutState()).legacyReads;
  }

  protected async legacyWrites(): Promise<boolean> {
    return (await this.layoutState()).legacyWrites;
  }

  /** `fresh`: read now, not as cached, for a quota about to be dealt on what it says. */
  protected async countersShardable(fresh = false): Promise<boolean> {
    if (fresh) this.layoutRead = undefined;
    return (await this.layoutState()).countersShardable;
  }

  /** Deals a quota usage shard 0 holds whole over the (org, type)'s shards; false when none is held whole any more. */
  async dealHeldQuota(org: string, machineType: string): Promise<boolean> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const usage = await this.getQuotaUsage(org, machineType);
      const held = usage?.quota !== undefined && !usage.shards?.some((shard) => shard.shard !== 0 && shard.cap !== undefined);
      if (!held) return false;
      try {
        await this.commit({ quotas: [quotaSetting({ ...usage, shardable: true }, usage.quota!)], history: [] });
        return true;
      } catch (error) {
        if (!(error instanceof StaleWriteError)) throw error;
      }
    }
    throw new StaleWriteError(`org ${org}'s ${machineType} usage kept changing while its quota was dealt over its shards`);
  }

  /**
   * The site's own items, each copied from its 0.1.0 key to its current one where it is not there yet: a write
   * guarded by the version read then finds the item it read. Idempotent, and never over a newer write.
   */
  async copyLegacySiteItems(): Promise<number> {
    const found = await this.getItems(LEGACY_SITE_ITEMS.map((site) => site.legacy));
    let copied = 0;
    for (const item of found) {
      const site = LEGACY_SITE_ITEMS.find((s) => s.legacy.pk === item.pk && s.legacy.sk === item.sk)!;
      if (await this.putIfAbsent({ ...item, ...siteItem(site.name) })) copied++;
    }
    return copied;
  }

  /**
   * Meta-instances that release 0.1.0 wrote get `memberIds` from its members index (its members not yet Terminated);
   * while the table is pinned every one does, since 0.1.0 may have placed a member that `memberIds` does not name.
   */
  private async withMembers(metas: MetaInstance[]): Promise<MetaInstance[]> {
    const pinned = metas.length > 0 && (await this.legacyWrites());
    return Promise.all(
      metas.map(async (meta) => {
        if (Array.isArray(meta.memberIds) && !pinned) return meta;
        const members = await this.allItems({ index: indexes.members, partition: legacyMembersPartition(meta.id), entriesOnly: true });
        return { ...meta, memberIds: members.map((item) => String(item.id ?? String(item.pk).slice('INSTANCE#'.length))) };
      }),
    );
  }

  async commit(change: Change): Promise<void> {
    const writes = writesOf(change, () => this.historySuffix(), this.due, await this.legacyWrites());
    if (writes.length > 0) await this.writeItems(writes);
  }

  async createMachines(machines: Machine[]): Promise<void> {
    const legacy = await this.legacyWrites();
    await this.putItems(machines.map((machine) => machineItem(machine, this.due.machine(machine))).map((item) => (legacy ? inLegacyLayout(item) : item)));
  }

  /**
   * Record that an event went out: a marker per event id, written only while there is none, and the `delivered`
   * history entry in the same transaction. False when its delivery was already recorded (a duplicated or
   * redelivered stream record).
   */
  async recordEventDelivery(eventId: string, delivered: HistoryEntry): Promise<boolean> {
    try {
      await this.writeItems([
        { put: eventDeliveryItem(eventId, delivered), expectedVersion: null },
        { put: historyItem(delivered, this.historySuffix()), expectedVersion: null },
      ]);
      return true;
    } catch (error) {
      if (error instanceof StaleWriteError) return false;
      throw error;
    }
  }

  async getMachine(id: string): Promise<Machine | null> {
    const item = await this.getItem(keys.machine(id));
    return item ? fromMachineItem(item) : null;
  }

  async getMachines(ids: string[]): Promise<Map<string, Machine>> {
    const items = await this.getItems([...new Set(ids)].map(keys.machine));
    return new Map(items.map((item) => [String(item.id), fromMachineItem(item)]));
  }

  async getRosterBuckets(ids: string[]): Promise<Map<string, RosterBucket>> {
    const items = await this.getItems([...new Set(ids)].map(keys.rosterBucket));
    return new Map(items.map((item) => [String(item.id), fromRosterBucketItem(item)]));
  }

  async getRosterDigests(): Promise<RosterDigests | null> {
    await this.legacyLayout();
    const item = await this.getItem(keys.siteRosterDigests);
    if (!item) return null;
    return {
      buckets: item.buckets as RosterDigests['buckets'],
      ...(typeof item.nextStaleAt === 'string' ? { nextStaleAt: item.nextStaleAt } : {}),
      version: Number(item.version),
    };
  }

  async getStaleCheck(id: string): Promise<StaleCheck | null> {
    const item = await this.getItem(keys.staleCheck(id));
    return item ? fromStaleCheckItem(item) : null;
  }

  async getMaintenances(ids: readonly string[]): Promise<Map<string, Maintenance>> {
    const items = await this.getItems([...new Set(ids)].map(keys.maintenance));
    return new Map(items.map((item) => [String(item.id), fromMaintenanceItem(item)]));
  }

  async getOpenMaintenances(): Promise<OpenMaintenances | null> {
    const item = await this.getItem(keys.siteOpenMaintenances);
    return item ? { ids: item.ids as string[], version: Number(item.version) } : null;
  }

  async listMaintenances(page: PageRequest & { state?: MaintenanceState | undefined }): Promise<Page<Maintenance>> {
    const [index, partition] = page.state ? [indexes.byOrg, maintenanceStatePartition(page.state)] : [indexes.byKind, MAINTENANCE_KIND];
    const result = await this.queryItems({ index, partition, descending: true, limit: page.limit }, page.nextToken);
    return { items: result.items.map(fromMaintenanceItem), nextToken: result.nextToken };
  }

  async getReservation(id: string): Promise<Reservation | null> {
    const item = await this.getItem(keys.reservation(id));
    return item ? fromReservationItem(item) : null;
  }

  async listReservations(org: string | null, page: PageRequest): Promise<Page<Reservation>> {
    const result = await this.queryItems(
      { index: org ? indexes.byOrg : indexes.byKind, partition: org ? reservationsOfOrg(org) : RESERVATION_KIND, descending: true, limit: page.limit },
      page.nextToken,
    );
    return { items: result.items.map(fromReservationItem), nextToken: result.nextToken };
  }

  async getInstance(id: string): Promise<Instance | null> {
    const item = await this.getItem(keys.instance(id));
    return item ? fromInstanceItem(item) : null;
  }

  async getMetaInstance(id: string): Promise<MetaInstance | null> {
    const item = await this.getItem(keys.metaInstance(id));
    return item ? (await this.withMembers([fromMetaInstanceItem(item)]))[0]! : null;
  }

  async getTenant(org: string): Promise<Tenant | null> {
    const item = await this.getItem(keys.tenant(org));
    return item ? fromTenantItem(item) : null;
  }

  async getCatalog(): Promise<Catalog> {
    await this.legacyLayout();
    return catalogOf(await this.getItem(keys.siteCatalog));
  }

  async getRecords(ids: RecordIds): Promise<Records> {
    const wanted = new Map<string, TableKey>();
    const want = (key: TableKey) => wanted.set(tableKeyOf(key), key);
    for (const id of ids.machines ?? []) want(keys.machine(id));
    for (const id of ids.instances ?? []) want(keys.instance(id));
    for (const id of ids.metaInstances ?? []) want(keys.metaInstance(id));
    if (ids.catalog) want(keys.siteCatalog);
    if (ids.siteHeartbeat) want(keys.siteHeartbeat);
    if (ids.safety) want(keys.siteSafety);
    if (ids.replacements) want(keys.siteReplacements);
    if (ids.catalog || ids.siteHeartbeat || ids.safety) await this.legacyLayout();
    const found = new Map((await this.getItems([...wanted.values()])).map((item) => [tableKeyOf(item), item]));
    const decode = <T>(list: readonly string[] | undefined, key: (id: string) => TableKey, from: (item: Item) => T): Map<string, T> => {
      const out = new Map<string, T>();
      for (const id of list ?? []) {
        const item = found.get(tableKeyOf(key(id)));
        if (item) out.set(id, from(item));
      }
      return out;
    };
    return {
      machines: decode(ids.machines, keys.machine, fromMachineItem),
      instances: decode(ids.instances, keys.instance, fromInstanceItem),
      metaInstances: await this.metaInstancesWithMembers(decode(ids.metaInstances, keys.metaInstance, fromMetaInstanceItem)),
      ...(ids.catalog ? { catalog: catalogOf(found.get(tableKeyOf(keys.siteCatalog))) } : {}),
      ...(ids.siteHeartbeat ? { siteHeartbeat: siteHeartbeatOf(found.get(tableKeyOf(keys.siteHeartbeat))) } : {}),
      ...(ids.safety ? { safety: safetyOf(found.get(tableKeyOf(keys.siteSafety))) } : {}),
      ...(ids.replacements ? { replacements: replacementsOf(found.get(tableKeyOf(keys.siteReplacements))) } : {}),
    };
  }

  private async metaInstancesWithMembers(metas: Map<string, MetaInstance>): Promise<Map<string, MetaInstance>> {
    return new Map((await this.withMembers([...metas.values()])).map((meta) => [meta.id, meta]));
  }

  async getSafety(): Promise<SafetyState | null> {
    await this.legacyLayout();
    return safetyOf(await this.getItem(keys.siteSafety));
  }

  async takeLease(name: string, holder: string, until: string, now: string): Promise<boolean> {
    const stored = await this.getItem(keys.siteLease(name));
    if (stored && String(stored.until) > now) return false;
    return this.putLease(name, { holder, until }, stored);
  }

  async renewLease(name: string, holder: string, until: string): Promise<boolean> {
    const stored = await this.getItem(keys.siteLease(name));
    return stored?.holder === holder && this.putLease(name, { holder, until }, stored);
  }

  async releaseLease(name: string, holder: string, now: string): Promise<void> {
    await this.renewLease(name, holder, now);
  }

  /** A lease item written over the one read (by its version): a rival's write in between wins, this one does not. */
  private async putLease(name: string, lease: { holder: string; until: string }, stored: Item | undefined): Promise<boolean> {
    const version = stored ? Number(stored.version) : null;
    try {
      await this.writeItems([{ put: { ...keys.siteLease(name), ...lease, version: (version ?? -1) + 1 }, expectedVersion: version }]);
      return true;
    } catch (error) {
      if (error instanceof StaleWriteError) return false;
      throw error;
    }
  }

  async deliveredEventIds(eventIds: string[]): Promise<Set<string>> {
    const markers = await this.getItems([...new Set(eventIds)].map(keys.eventDelivery));
    return new Set(markers.map((marker) => String(marker.eventId)));
  }

  async outboxEntriesOfDay(day: string, window: OutboxWindow, page: PageRequest): Promise<Page<PositionedOutboxEntry>> {
    const result = await this.queryItems(
      { index: indexes.eventsByDay, partition: eventDayPartition(day), sort: { between: [window.after, window.until] }, limit: page.limit },
      page.nextToken,
    );
    // The range is inclusive: the entry at `after` was settled before.
    const items = result.items.filter((item) => item.eventDaySk !== window.after);
    return { items: items.flatMap((item) => positionedOutboxEntryOf(item) ?? []), nextToken: result.nextToken };
  }

  async getOutboxCursor(): Promise<OutboxCursor | null> {
    const item = await this.getItem(keys.siteOutboxCursor);
    return item ? { through: String(item.through), version: Number(item.version) } : null;
  }

  async putOutboxCursor(before: OutboxCursor | null, through: string): Promise<void> {
    const version = before ? before.version + 1 : 0;
    await this.writeItems([{ put: { ...keys.siteOutboxCursor, through, version }, expectedVersion: before?.version ?? null }]);
  }

  async getSiteHeartbeat(): Promise<SiteHeartbeat | null> {
    await this.legacyLayout();
    return siteHeartbeatOf(await this.getItem(keys.siteHeartbeat));
  }

  /**
   * Strongly consistent, one Query of the type's shards: a create is decided on the counts it is guarded by. `fresh`:
   * the table's layout read now rather than as cached, for a quota about to be dealt on what it says.
   */
  async getQuotaUsage(org: string, machineType: string, options: { fresh?: boolean } = {}): Promise<QuotaUsage> {
    const [items, shardable] = await Promise.all([
      this.allItems({ partition: quotaPartition(org), sort: { between: quotaShardRange(machineType) }, consistent: true }),
      this.countersShardable(options.fresh),
    ]);
    return quotaUsagesOf(items, shardable)[0] ?? { org, machineType, used: 0, shards: [], shardable };
  }

  /** Strongly consistent: the usage shown is the one the org's creates are guarded by, not a moment old. */
  async listQuotaUsage(org: string): Promise<QuotaUsage[]> {
    const [items, shardable] = await Promise.all([this.allItems({ partition: quotaPartition(org), consistent: true }), this.countersShardable()]);
    return quotaUsagesOf(items, shardable);
  }

  /** An org's, one partition; every org's, the listing shards (listingPartitions) merged newest first. */
  async listMetaInstances(org: string | null, page: PageRequest): Promise<Page<MetaInstance>> {
    const result = org
      ? await this.queryItems({ index: indexes.byOrg, partition: `ORG#${org}#META`, descending: true, limit: page.limit }, page.nextToken)
      : await this.readMerged(
          'meta-instances',
          [...(await this.legacyPartitions(LEGACY_META_KIND)), ...listingPartitions(META_LISTING)].map(
            (partition): ItemQuery => ({ index: indexes.byKind, partition, descending: true }),
          ),
          page,
        );
    return { items: await this.withMembers(result.items.map(fromMetaInstanceItem)), nextToken: result.nextToken };
  }

  async waitingMetaInstances(machineType: string, limit: number): Promise<MetaInstance[]> {
    const result = await this.queryItems({ index: indexes.waiting, partition: `WAIT#${machineType}`, limit });
    return this.withMembers(result.items.map(fromMetaInstanceItem));
  }

  /** The replacing index holds only replacements still provisioning. */
  replacementsInFlight(): Promise<number> {
    return this.countItems({ index: indexes.replacing, partition: 'REPLACING' });
  }

  /**
   * From `from.rack` on through the type's racks (the catalog's, by name), then from the first: a keys-only Query a
   * rack, RACKS_AT_ONCE at once, each for what is still wanted, until `limit` (with `from`: `from.enough`) are found.
   * A type nearly exhausted reads every rack of it (docs/design.md, "Partition keys under load").
   */
  async allocatableMachineIds(machineType: string, limit = 100, from?: { rack: string; enough: number }, reservedFor?: string): Promise<string[]> {
    if (reservedFor !== undefined) {
      const page = await this.queryItems({ index: indexes.allocatable, partition: reservedPoolPartition(machineType, reservedFor), limit, entriesOnly: true });
      return page.items.map((entry) => machineIdOfKey(String(entry.pk)));
    }
    const racks = typeRacks(await this.getCatalog(), machineType);
    const start = Math.max(0, from === undefined ? 0 : racks.findIndex((rack) => rack >= from.rack));
    const enough = from === undefined ? limit : Math.min(from.enough, limit);
    const ids: string[] = [];
    // The racks from `from.rack` on, then (only when they fell short) those before it: no round spans the two.
    for (const stretch of [racks.slice(start), racks.slice(0, start)]) {
      for (let at = 0; at < stretch.length && ids.length < enough; at += RACKS_AT_ONCE) {
        const round = stretch.slice(at, at + RACKS_AT_ONCE).map((rack) => allocatablePartition(machineType, rack));
        const room = limit - ids.length;
        const pages = await Promise.all(round.map((partition) => this.queryItems({ index: indexes.allocatable, partition, limit: room, entriesOnly: true })));
        for (const page of pages) ids.push(...page.items.slice(0, limit - ids.length).map((entry) => machineIdOfKey(String(entry.pk))));
      }
    }
    for (const partition of ids.length < enough ? await this.legacyPartitions(legacyAllocatablePartition(machineType)) : []) {
      const page = await this.queryItems({ index: indexes.allocatable, partition, limit: limit - ids.length, entriesOnly: true });
      ids.push(...page.items.map((entry) => machineIdOfKey(String(entry.pk))));
    }
    return ids;
  }

  async allocatableMachinesPage(machineType: string, page: AllocatablePage): Promise<Page<Machine>> {
    const { rack, nvlinkDomain, reservedFor } = page;
    if (nvlinkDomain !== undefined || page.byNvlinkDomain === true) {
      const result = await this.queryItems(
        {
          index: indexes.allocatableByDomain,
          partition: allocatableDomainPartition(machineType, reservedFor),
          ...(nvlinkDomain === undefined ? {} : { sort: { beginsWith: allocatableDomainPrefix(nvlinkDomain) } }),
          limit: page.limit,
        },
        page.nextToken,
      );
      // A domain whose name extends this one's with `#` shares the prefix: it is not this one.
      const machines = result.items.map(fromMachineItem).filter((machine) => nvlinkDomain === undefined || machine.nvlinkDomain === nvlinkDomain);
      return { items: machines, nextToken: result.nextToken };
    }
    if (reservedFor !== undefined) {
      const partition = reservedPoolPartition(machineType, reservedFor);
      const sort = rack === undefined ? {} : { sort: { beginsWith: allocatableSortKey(rack, '') } };
      const result = await this.queryItems({ index: indexes.allocatable, partition, ...sort, limit: page.limit }, page.nextToken);
      // A rack whose name extends this one's with `#` shares the prefix: it is not this one.
      return { items: result.items.map(fromMachineItem).filter((machine) => rack === undefined || machine.rack === rack), nextToken: result.nextToken };
    }
    const racks = rack === undefined ? typeRacks(await this.getCatalog(), machineType) : [rack];
    const legacy = (await this.legacyPartitions(legacyAllocatablePartition(machineType))).map(
      (partition): ItemQuery => ({
        index: indexes.allocatable,
        partition,
        ...(rack === undefined ? {} : { sort: { beginsWith: allocatableSortKey(rack, '') } }),
      }),
    );
    const queries = [...legacy, ...racks.map((r): ItemQuery => ({ index: indexes.allocatable, partition: allocatablePartition(machineType, r) }))];
    const result = await this.readInOrder(`allocatable:${machineType}`, queries, page);
    return { items: result.items.map(fromMachineItem), nextToken: result.nextToken };
  }

  /** Rack by rack (the catalog's racks, by name), each rack's machines by id: a Query of byKind per rack read. */
  async listMachines(page: PageRequest): Promise<Page<Machine>> {
    const partitions = [...(await this.legacyPartitions(LEGACY_MACHINE_KIND)), ...catalogRacks(await this.getCatalog()).map(machineKind)];
    const queries = partitions.map((partition): ItemQuery => ({ index: indexes.byKind, partition }));
    const result = await this.readInOrder('machines', queries, page);
    return { items: result.items.map(fromMachineItem), nextToken: result.nextToken };
  }

  /** Claimed repairs are all read: their deadlines depend on each machine's repair_eta. Costs what is in repair. */
  async repairsToWatch(unclaimedBefore: Date): Promise<Machine[]> {
    // One range of the index: `in-repair#…` sorts before `unclaimed#…`, and unclaimed ones by request time.
    const between: [string, string] = ['in-repair#', `unclaimed#${unclaimedBefore.toISOString()}`];
    return (await this.allItems({ index: indexes.repairRequested, partition: REPAIR_PARTITION, sort: { between } })).map(fromMachineItem);
  }

  async machinesAwaitingRepair(page: PageRequest): Promise<Page<Machine>> {
    const result = await this.queryItems({ index: indexes.repairRequested, partition: REPAIR_PARTITION, limit: page.limit }, page.nextToken);
    return { items: result.items.map(fromMachineItem), nextToken: result.nextToken };
  }

  /** Every one of the org's listing shards (listingPartitions), merged newest first. */
  async listInstances(org: string, page: PageRequest & { status?: string | undefined }): Promise<Page<Instance>> {
    const where = page.status ? { where: { attribute: 'status', equals: page.status } } : {};
    const partitions = [...(await this.legacyPartitions(legacyInstanceListing(org))), ...listingPartitions(instanceListing(org))];
    const queries = partitions.map((partition): ItemQuery => ({ index: indexes.byOrg, partition, descending: true, ...where }));
    const result = await this.readMerged(JSON.stringify(['instances', org, page.status ?? null]), queries, page);
    return { items: result.items.map(fromInstanceItem), nextToken: result.nextToken };
  }

  async listHistory(machineId: string, page: PageRequest): Promise<Page<HistoryEntry>> {
    const result = await this.queryItems(
      {
        partition: keys.history(machineId, '', '').pk,
        sort: { beginsWith: keys.historyPrefix },
        descending: true,
        limit: page.limit,
        // A machine's own partition, read strongly: whoever just acted on the machine sees the entry it wrote.
        consistent: true,
      },
      page.nextToken,
    );
    return { items: result.items.map(fromHistoryItem), nextToken: result.nextToken };
  }

  async listReports(org: string, page: PageRequest): Promise<Page<HistoryEntry>> {
    const result = await this.queryItems({ index: indexes.byOrg, partition: reportPartition(org), descending: true, limit: page.limit }, page.nextToken);
    return { items: result.items.map(fromHistoryItem), nextToken: result.nextToken };
  }

  async historySince(machineId: string, at: string, limit: number): Promise<HistoryEntry[]> {
    const { pk } = keys.history(machineId, '', '');
    // Sort keys are `HISTORY#<ISO time>#<unique>`: every one from `at` on sorts below `HISTORY#~`.
    const result = await this.queryItems({ partition: pk, sort: { between: [`${keys.historyPrefix}${at}`, `${keys.historyPrefix}~`] }, limit });
    return result.items.map(fromHistoryItem);
  }

  /** One Query (paged) of the sparse eventsByDay index: costs the day's events, not the fleet. */
  async eventsOnDay(day: string): Promise<HistoryEntry[]> {
    return (await this.allItems({ index: indexes.eventsByDay, partition: eventDayPartition(day) })).map(fromHistoryItem);
  }

  /**
   * One Query whatever the filter: a target's own partition (an actor too: filtered after Limit), else the actor's
   * index partition, else every entry through byKind. `since` is a range on the time-led sort key.
   */
  async listAudit(filter: AuditFilter, page: PageRequest): Promise<Page<AuditEntry>> {
    const [index, partition] =
      filter.target !== undefined
        ? [undefined, auditTargetPartition(filter.target)]
        : filter.actor !== undefined
          ? [indexes.auditByActor, auditActorPartition(filter.actor)]
          : [indexes.byKind, AUDIT_KIND];
    const result = await this.queryItems(
      {
        ...(index ? { index } : {}),
        partition,
        // Sort keys are `<ISO time>#<unique>`: every one from `since` on sorts below '~'.
        ...(filter.since !== undefined ? { sort: { between: [filter.since, '~'] as [string, string] } } : {}),
        descending: true,
        limit: page.limit,
        ...(filter.target !== undefined && filter.actor !== undefined ? { where: { attribute: 'actor', equals: filter.actor } } : {}),
      },
      page.nextToken,
    );
    return { items: result.items.map(fromAuditItem), nextToken: result.nextToken };
  }

  async getSummaryShard(machineType: string, shard: number): Promise<SummaryShard | null> {
    const item = await this.getItem(keys.summaryShard(machineType, shard));
    return item ? fromSummaryShardItem(item) : null;
  }

  async getSummaryItems(
    racks: Array<{ machineType: string; rack: string }>,
    shards: Array<{ machineType: string; shard: number }>,
    machineIds: readonly string[] = [],
  ) {
    const items = await this.getItems([
      ...racks.map((r) => keys.summaryRack(r.machineType, r.rack)),
      ...shards.map((s) => keys.summaryShard(s.machineType, s.shard)),
      ...[...new Set(machineIds)].map(keys.machine),
    ]);
    return {
      racks: items.filter((item) => item.entity === 'summary-rack').map(fromRackAggregateItem),
      shards: items.filter((item) => item.entity === 'summary-shard').map(fromSummaryShardItem),
      machines: new Map(items.filter((item) => item.entity === 'machine').map((item) => [String(item.id), fromMachineItem(item)])),
    };
  }

  /**
   * Every counter item of the catalog's types, by key: types x SUMMARY_SHARDS x COUNTER_ITEMS_PER_SHARD items, whatever
   * the fleet's size; the domain counters only when asked for. A type has counters only once the catalog has it.
   */
  async summaryShards({ nvlinkDomains = false } = {}): Promise<SummaryShard[]> {
    const counterItems = Array.from({ length: SUMMARY_SHARDS * COUNTER_ITEMS_PER_SHARD }, (_, shard) => shard);
    const wanted = Object.keys((await this.getCatalog()).types).flatMap((type) => counterItems.map((shard) => keys.summaryShard(type, shard)));
    const attributes = nvlinkDomains ? undefined : ['machineType', 'shard', 'counters', 'version'];
    const items = await this.getItems(wanted, { attributes });
    return items.map(fromSummaryShardItem).sort((a, b) => (a.machineType === b.machineType ? a.shard - b.shard : a.machineType < b.machineType ? -1 : 1));
  }

  /**
   * A type's racks, or one shard's, by name: the catalog names them, and a page reads the next of them by key, at most
   * RACKS_PER_PAGE (one BatchGetItem), strongly consistent for a shard's recount. A rack the catalog has but no aggregate
   * yet is absent, so a page may come back short; its token names the rack the next page starts at.
   */
  async listRackAggregates(machineType: string, page: PageRequest & { shard?: number | undefined }): Promise<Page<RackAggregate>> {
    const scope = page.shard === undefined ? `summary-racks:${machineType}` : `summary-racks:${machineType}:${page.shard}`;
    const cursor = decodeSequencePageToken(scope, page.nextToken);
    // Pages end between racks: a token naming a place inside one was not issued here.
    if (cursor !== undefined && cursor.token !== null) throw invalidPageToken('not a token of this listing');
    const racks = typeRacks(await this.getCatalog(), machineType).filter((rack) => page.shard === undefined || shardOf(rack) === page.shard);
    const start = cursor === undefined ? 0 : racks.findIndex((rack) => rack >= cursor.partition);
    const from = start < 0 ? racks.length : start;
    const wanted = racks.slice(from, from + Math.min(page.limit, RACKS_PER_PAGE));
    const next = racks[from + wanted.length];
    const read = await this.getItems(
      wanted.map((rack) => keys.summaryRack(machineType, rack)),
      { consistent: page.shard !== undefined },
    );
    const byRack = new Map(read.map(fromRackAggregateItem).map((aggregate) => [aggregate.rack, aggregate]));
    return {
      items: wanted.flatMap((rack) => byRack.get(rack) ?? []),
      nextToken: encodeSequencePageToken(scope, next === undefined ? undefined : { partition: next, token: null }),
    };
  }

  /** Costs what is due, not what the fleet holds: one Query of each due shard (keys only), merged by due time. */
  async dueEntities(now: Date, page: PageRequest): Promise<Page<DueEntry>> {
    const sort = { atMost: now.toISOString() };
    const partitions = [...(await this.legacyPartitions(LEGACY_DUE_PARTITION)), ...duePartitions];
    const queries = partitions.map((partition): ItemQuery => ({ index: indexes.due, partition, sort, entriesOnly: true }));
    const result = await this.readMerged('due', queries, page);
    return { items: result.items.map(dueEntryOf), nextToken: result.nextToken };
  }

  async getCapacityItems(ids: CapacityItemIds): Promise<CapacityItems> {
    const wanted = new Map<string, TableKey>();
    const want = (key: TableKey) => wanted.set(tableKeyOf(key), key);
    for (const id of ids.machines ?? []) want(keys.machine(id));
    for (const id of ids.nodes ?? []) want(capacityKeys.node(id));
    for (const id of ids.instances ?? []) want(keys.instance(id));
    for (const { org, shard } of ids.shards ?? []) want(capacityKeys.shard(org, shard));
    const items = await this.getItems([...wanted.values()]);
    const of = (entity: string) => items.filter((item) => item.entity === entity);
    return {
      machines: new Map(of('machine').map((item) => [String(item.id), fromMachineItem(item)])),
      instances: new Map(of('instance').map((item) => [String(item.id), fromInstanceItem(item)])),
      nodes: new Map(of('capacity-node').map((item) => [String(item.machineId), fromCapacityNodeItem(item)])),
      shards: of('org-capacity').map(fromOrgCapacityShardItem),
    };
  }

  /** ORG_CAPACITY_SHARDS items by key, whatever the org holds: one BatchGetItem. */
  async orgCapacityShards(org: string): Promise<OrgCapacityShard[]> {
    const shards = Array.from({ length: ORG_CAPACITY_SHARDS }, (_, shard) => capacityKeys.shard(org, shard));
    return (await this.getItems(shards)).map(fromOrgCapacityShardItem).sort((a, b) => a.shard - b.shard);
  }

  /** One org's points from `since` on, oldest first, a page at a time: one Query a page. */
  async listCapacityPoints(org: string, since: string, page: PageRequest): Promise<Page<CapacityPoint>> {
    const query: ItemQuery = { partition: capacityHistoryPartition(org), sort: { atLeast: since }, limit: page.limit };
    const result = await this.queryItems(query, page.nextToken);
    return { items: result.items.map(fromCapacityPointItem), nextToken: result.nextToken };
  }

  /** The orgs among `orgs` that have a point at `at`: one batch read. */
  async orgsWithCapacityPoint(orgs: readonly string[], at: string): Promise<Set<string>> {
    const items = await this.getItems(orgs.map((org) => ({ pk: capacityHistoryPartition(org), sk: at })));
    return new Set(items.map((item) => String(item.org)));
  }

  async capacityOrgs(): Promise<string[]> {
    const partitions = await Promise.all(orgCapacityKinds.map((partition) => this.allItems({ index: indexes.byKind, partition, entriesOnly: true })));
    const entries = partitions.flat();
    return [...new Set(entries.map((item) => String(item.kindSk).split('#')[0]!))].sort();
  }

  /** A shard's nodes, or every shard's one after another (shard, then machine id): a Query a partition. */
  async listCapacityNodes(org: string, page: PageRequest & { shard?: number | undefined }): Promise<Page<CapacityNode>> {
    const shards = page.shard === undefined ? Array.from({ length: ORG_CAPACITY_SHARDS }, (_, shard) => shard) : [page.shard];
    const queries = shards.map((shard): ItemQuery => ({ index: indexes.byOrg, partition: capacityKeys.nodesOfShard(org, shard) }));
    const result = await this.readInOrder(`capacity-nodes:${org}`, queries, page);
    return { items: result.items.map(fromCapacityNodeItem), nextToken: result.nextToken };
  }

  async capacityFeedHeads(orgs: readonly string[]): Promise<Map<string, number>> {
    const heads = await Promise.all(
      [...new Set(orgs)].map(async (org) => {
        const last = await this.queryItems({ partition: capacityKeys.feedOf(org), descending: true, limit: 1, consistent: true });
        return [org, last.items[0] ? Number(last.items[0].seq) : 0] as const;
      }),
    );
    return new Map(heads);
  }

  async capacityFeedAfter(org: string, after: number, limit: number): Promise<CapacityFeedEntry[]> {
    const page = await this.queryItems({ partition: capacityKeys.feedOf(org), sort: { atLeast: feedSk(after + 1) }, limit, consistent: true });
    return page.items.map(fromCapacityFeedItem);
  }

  /**
   * Partitions of one listing read side by side and merged in their sort key's order (their queries' direction, ties
   * by table key): each is read up to the page's limit, all at once, and the page is the first `limit` of what came
   * back. A partition that stopped short of its limit with more to read (a filter left items out, or DynamoDB's 1 MB
   * a page) has read only up to where it stopped: nothing past that is taken from any partition, since its unread
   * items may come before them. So a page may come back short, even empty, with a token; the token holds where each
   * partition stands, and each page moves at least the partition that stopped first on.
   */
  private async readMerged(scope: string, queries: readonly ItemQuery[], page: PageRequest): Promise<ItemPage> {
    const cursors = decodeMergedPageToken(scope, page.nextToken, queries.length);
    const pages = await Promise.all(
      queries.map((query, at) => {
        const cursor = cursors[at];
        return cursor === 'done' ? NOTHING_LEFT : this.queryItems({ ...query, limit: page.limit }, cursor ?? undefined);
      }),
    );
    const order = (a: Item, b: Item) => compareByQuery(queries[0]!, a, b);
    const stops = pages.flatMap((found, at) => (found.nextToken ? [decodePageToken(listingOf(queries[at]!), found.nextToken)] : []));
    const readUpTo = (item: Item) => stops.every((stop) => order(item, stop) <= 0);
    const read = pages.flatMap((found, at) => found.items.map((item) => ({ item, at })));
    const taken = read
      .filter(({ item }) => readUpTo(item))
      .sort((a, b) => order(a.item, b.item))
      .slice(0, page.limit);
    const next = cursors.map((cursor, at): PartitionCursor => {
      if (cursor === 'done') return cursor;
      const found = pages[at]!;
      const mine = taken.filter((t) => t.at === at).length;
      if (mine === found.items.length) return found.nextToken ?? 'done';
      return mine === 0 ? cursor : lastKeyToken(queries[at]!, found.items[mine - 1]!);
    });
    return { items: taken.map((t) => t.item), nextToken: encodeMergedPageToken(scope, next) };
  }

  /**
   * Partitions read one after another, in the order of their names, as one listing: RACKS_AT_ONCE at a time, each
   * for what the page still has room for; a page reads PARTITIONS_PER_PAGE of them or, if more, its limit's number.
   * A page stops in the partition that has more than it took, or after the last partition it may read; the token
   * names the partition to go on in and where in it (a partition gone since resumes at the next one). So a page may
   * come back short, even empty, with a token.
   */
  private async readInOrder(scope: string, queries: readonly ItemQuery[], page: PageRequest): Promise<ItemPage> {
    const cursor = decodeSequencePageToken(scope, page.nextToken);
    let at = cursor ? queries.findIndex((query) => query.partition >= cursor.partition) : 0;
    if (at < 0) at = queries.length;
    let token = cursor && queries[at]?.partition === cursor.partition ? (cursor.token ?? undefined) : undefined;
    const items: Item[] = [];
    const stopAt = (query: ItemQuery | undefined, inner: string | null) =>
      encodeSequencePageToken(scope, query && { partition: query.partition, token: inner });
    const end = Math.min(queries.length, at + Math.max(PARTITIONS_PER_PAGE, page.limit));
    while (at < end) {
      const wave = queries.slice(at, Math.min(end, at + RACKS_AT_ONCE));
      const room = page.limit - items.length;
      const pages = await Promise.all(wave.map((query, i) => this.queryItems({ ...query, limit: room }, i === 0 ? token : undefined)));
      for (const [i, found] of pages.entries()) {
        const query = wave[i]!;
        const taken = found.items.slice(0, page.limit - items.length);
        items.push(...taken);
        const last = taken.at(-1);
        if (taken.length < found.items.length) {
          const from = last ? lastKeyToken(query, last) : i === 0 ? (token ?? null) : null;
          return { items, nextToken: stopAt(query, from) };
        }
        if (found.nextToken) return { items, nextToken: stopAt(query, found.nextToken) };
        if (items.length === page.limit) return { items, nextToken: stopAt(queries[at + i + 1], null) };
      }
      at += wave.length;
      token = undefined;
    }
    return { items, nextToken: stopAt(queries[at], null) };
  }

  /** The 0.1.0 partition a listing also reads while the table may hold that layout; none after the contract. */
  private async legacyPartitions(partition: string): Promise<string[]> {
    return (await this.legacyLayout()) ? [partition] : [];
  }

  private async allItems(query: ItemQuery): Promise<Item[]> {
    const items: Item[] = [];
    let nextToken: string | undefined;
    do {
      const page = await this.queryItems(query, nextToken);
      items.push(...page.items);
      nextToken = page.nextToken;
    } while (nextToken);
    return items;
  }
}
