import type { MigrationStatus } from '#store/migrations/runner.ts';
import type { QuotaUsage } from '#domain/reservations/quotas.ts';
import type { AuditEntry } from '#domain/events/audit.ts';
import type { Catalog } from '#domain/machines/catalog.ts';
import type { Change } from '#domain/core/change.ts';
import type { RosterBucket, RosterDigests, SiteHeartbeat, StaleCheck } from '#domain/machines/heartbeat.ts';
import type { CapacityPoint } from '#domain/capacity/capacity-history.ts';
import type { RackAggregate, SummaryShard } from '#domain/machines/fleet-summary.ts';
import type { Maintenance, MaintenanceState, OpenMaintenances } from '#domain/maintenance/maintenance.ts';
import type { HistoryEntry, Instance, Machine, MetaInstance, ReplacementsInFlight, Tenant } from '#domain/core/model.ts';
import type { SafetyState } from '#domain/repair/safety.ts';
import type { OutboxEntry } from '#domain/events/events.ts';
import type { OutboxWindow } from '#domain/events/outbox.ts';
import type { Page } from '#store/paging.ts';
import type { CapacityNode, OrgCapacityShard } from '#domain/capacity/org-capacity.ts';
import type { CapacityFeedEntry } from '#domain/capacity/capacity-events.ts';
import type { Reservation } from '#domain/reservations/reservations.ts';

/** Where the sweep's outbox fallback has looked up to (domain/events/outbox.ts), with the version it was written at. */
export interface OutboxCursor {
  through: string;
  version: number;
}

/** An outbox entry with its place in the eventsByDay index (its position, domain/events/outbox.ts). */
export interface PositionedOutboxEntry {
  position: string;
  outbox: OutboxEntry;
}

/** A due-index entry: the kind of record that fell due (a reconciler's entity kind) and its id. */
export interface DueEntry {
  entity: string;
  id: string;
}

/**
 * When each record next falls due, by the reconcilers' rules (functions/reconcilers/due-times.ts `dueTimes`): the
 * store writes it into the due index with the record. Given to the store, so the store knows no reconciler.
 */
export interface DueTimes {
  machine(machine: Machine): string | undefined;
  instance(instance: Instance): string | undefined;
  metaInstance(meta: MetaInstance): string | undefined;
  rosterBucket(bucket: RosterBucket): string | undefined;
  maintenance(maintenance: Maintenance): string | undefined;
  reservation(reservation: Reservation): string | undefined;
}

/**
 * DynamoDB throttled a call and kept throttling it for the store's whole retry budget (store/throttle.ts): nothing
 * of it was written (a batch: some of it may have been; its caller resumes). The API answers 503 `throttled`.
 */
export class ThrottledError extends Error {
  override name = 'ThrottledError';
}

/** Someone else changed a record between our read and our write: reload, decide again. */
export class StaleWriteError extends Error {
  override name = 'StaleWriteError';
}

/**
 * A page of a type's free machines: all in rack order, one rack's, all with an NVLink domain in domain order, one
 * domain's; of the shared pool, or with `reservedFor`, those the org's reservations hold.
 */
export type AllocatablePage = PageRequest & {
  rack?: string | undefined;
  nvlinkDomain?: string | undefined;
  byNvlinkDomain?: boolean | undefined;
  reservedFor?: string | undefined;
};

export interface PageRequest {
  limit: number;
  nextToken?: string | undefined;
}

/** What `getRecords` reads: ids by kind, and the site's catalog, heartbeat, safety state or replacements when asked for. */
export interface RecordIds {
  machines?: readonly string[] | undefined;
  instances?: readonly string[] | undefined;
  metaInstances?: readonly string[] | undefined;
  catalog?: boolean | undefined;
  siteHeartbeat?: boolean | undefined;
  safety?: boolean | undefined;
  replacements?: boolean | undefined;
}

/** What `getRecords` found, by id; `catalog`, `siteHeartbeat` and `safety` are present only when asked for. */
export interface Records {
  machines: Map<string, Machine>;
  instances: Map<string, Instance>;
  metaInstances: Map<string, MetaInstance>;
  catalog?: Catalog;
  siteHeartbeat?: SiteHeartbeat | null;
  safety?: SafetyState | null;
  replacements?: ReplacementsInFlight | null;
}

/** What `getCapacityItems` reads: machines, their node items and instances, and orgs' counter shards. */
export interface CapacityItemIds {
  machines?: readonly string[];
  nodes?: readonly string[];
  instances?: readonly string[];
  shards?: ReadonlyArray<{ org: string; shard: number }>;
}

export interface CapacityItems {
  machines: Map<string, Machine>;
  instances: Map<string, Instance>;
  /** By machine id. */
  nodes: Map<string, CapacityNode>;
  shards: OrgCapacityShard[];
}

/** Which audit entries to list; each given filter narrows the listing. `since` is an ISO time (UTC, with ms). */
export interface AuditFilter {
  actor?: string | undefined;
  target?: string | undefined;
  since?: string | undefined;
}

/**
 * What services and reconcilers read and write. DynamoFleetStore is the deployed implementation; MemoryFleetStore
 * keeps the same rules in memory for tests. Reads of single records are strongly consistent; index reads may lag.
 */
export interface FleetStore {
  getMachine(id: string): Promise<Machine | null>;
  /** Many machines at once (BatchGetItem): those found, by id. */
  getMachines(ids: string[]): Promise<Map<string, Machine>>;
  getInstance(id: string): Promise<Instance | null>;
  /**
   * Records of several kinds at once, in ONE strongly consistent read (BatchGetItem; more than 100 keys take one
   * per 100): for a load that knows the ids of everything it needs up front. Those not found are left out of the
   * maps; the catalog (empty when none is stored) and the site heartbeat (null when none) only when asked for.
   */
  getRecords(ids: RecordIds): Promise<Records>;
  getMetaInstance(id: string): Promise<MetaInstance | null>;
  getTenant(org: string): Promise<Tenant | null>;
  getCatalog(): Promise<Catalog>;
  getSafety(): Promise<SafetyState | null>;
  /**
   * Take the site-wide lease `name` for `holder` until `until` (ISO): true when it was free (never taken, released,
   * or expired by `now`) and this call won it; false while another holder has it, or when a rival won the race.
   */
  takeLease(name: string, holder: string, until: string, now: string): Promise<boolean>;
  /** Hold the lease until `until` (ISO), if `holder` still has it: true when it does. */
  renewLease(name: string, holder: string, until: string): Promise<boolean>;
  /** Give the lease back, if `holder` still has it. */
  releaseLease(name: string, holder: string, now: string): Promise<void>;
  /** The table's data version and each migration's progress (store/migrations). */
  migrationStatus(): Promise<MigrationStatus>;
  /**
   * Declares the deploy of this release done: the table is no longer pinned to the layout of the release before, and
   * the migrations that move its items may start (the next sweep starts them).
   */
  startMigrations(): Promise<MigrationStatus>;
  getSiteHeartbeat(): Promise<SiteHeartbeat | null>;
  /** The roster buckets stored (BatchGetItem), by bucket id; a bucket never written is left out. */
  getRosterBuckets(ids: string[]): Promise<Map<string, RosterBucket>>;
  getRosterDigests(): Promise<RosterDigests | null>;
  getStaleCheck(id: string): Promise<StaleCheck | null>;
  /** Maintenance records by id (BatchGetItem, strongly consistent); those not found are left out. */
  getMaintenances(ids: readonly string[]): Promise<Map<string, Maintenance>>;
  /** The site's list of open maintenance (null before the first declaration). */
  getOpenMaintenances(): Promise<OpenMaintenances | null>;
  getReservation(id: string): Promise<Reservation | null>;
  /** Newest first; one org's, or the whole site's when `org` is null. */
  listReservations(org: string | null, page: PageRequest): Promise<Page<Reservation>>;
  /** Every maintenance, newest first; with `state`, of that state only (a filter: a page may come back short). */
  listMaintenances(page: PageRequest & { state?: MaintenanceState | undefined }): Promise<Page<Maintenance>>;

  /**
   * An org's usage of a machine type, its quota and its shards (domain/reservations/quota-shards.ts); none counted yet, zero.
   * `fresh`: whether the table is pinned read now, not as cached, for a quota about to be dealt on it.
   */
  getQuotaUsage(org: string, machineType: string, options?: { fresh?: boolean }): Promise<QuotaUsage>;
  /** Every machine type an org has a usage item for: one Query of the org's partition. */
  listQuotaUsage(org: string): Promise<QuotaUsage[]>;
  /** Deals a quota that usage shard 0 holds whole over the (org, type)'s shards (migration 4); false when none is held. */
  dealHeldQuota(org: string, machineType: string): Promise<boolean>;
  /** Newest first; one org's, or the whole site's when `org` is null. */
  listMetaInstances(org: string | null, page: PageRequest): Promise<Page<MetaInstance>>;
  /** Meta-instances waiting for machines of a type, oldest first: they get freed machines in order. */
  waitingMetaInstances(machineType: string, limit: number): Promise<MetaInstance[]>;
  /**
   * Meta-instance replacements still provisioning, site-wide, as the `replacing` index counts them: for gauges and
   * views. The cap counts the replacements record (getRecords), which no index lag can make short.
   */
  replacementsInFlight(): Promise<number>;
  /**
   * Candidates for allocation: up to `limit` machines of the type's allocatable index, ids only (no machine read),
   * rack by rack (a Query a rack, several at once). With `from`, from that rack on, so that creates starting at
   * different racks read different machines, and then the racks before it, only while fewer than `from.enough` were
   * found. The index may lag, so the claiming commit re-checks. With `reservedFor`, the machines the org's
   * reservations hold instead of the shared pool.
   */
  allocatableMachineIds(machineType: string, limit?: number, from?: { rack: string; enough: number }, reservedFor?: string): Promise<string[]>;
  /**
   * The allocatable index page by page, ordered by rack and then id, so a rack's free machines come together;
   * with `rack`, that rack's free machines only. A page reads a bounded number of racks: it may come back short, even
   * empty, with a nextToken. With `byNvlinkDomain`, the free machines that carry an NVLink
   * domain, ordered by domain and then id; with `nvlinkDomain`, that domain's only. The index may lag, as above.
   */
  allocatableMachinesPage(machineType: string, page: AllocatablePage): Promise<Page<Machine>>;
  listMachines(page: PageRequest): Promise<Page<Machine>>;
  /** Every claimed repair, then the unclaimed repair requests older than `unclaimedBefore`, oldest first: one Query. */
  repairsToWatch(unclaimedBefore: Date): Promise<Machine[]>;
  /** Machines with a repair request: claimed (in-repair) ones first, then unclaimed ones, each stage oldest first. */
  machinesAwaitingRepair(page: PageRequest): Promise<Page<Machine>>;
  /** One org's instances, newest first, optionally of one status. */
  listInstances(org: string, page: PageRequest & { status?: string | undefined }): Promise<Page<Instance>>;
  /** A machine's history, newest first. */
  listHistory(machineId: string, page: PageRequest): Promise<Page<HistoryEntry>>;
  /** An org's issue reports (its releases with an issue: history entries with `reportingOrg`), newest first: one Query. */
  listReports(org: string, page: PageRequest): Promise<Page<HistoryEntry>>;
  /** A machine's history from `at` on (that instant included), oldest first, at most `limit` entries: one Query. */
  historySince(machineId: string, at: string, limit: number): Promise<HistoryEntry[]>;
  /** Every history entry carrying an event on one UTC day (`yyyy-mm-dd`), oldest first: what repair stats count. */
  eventsOnDay(day: string): Promise<HistoryEntry[]>;
  /** Provider actions, newest first. */
  listAudit(filter: AuditFilter, page: PageRequest): Promise<Page<AuditEntry>>;
  /** The fleet summary's aggregates (domain/machines/fleet-summary.ts), kept by the stream. */
  getSummaryShard(machineType: string, shard: number): Promise<SummaryShard | null>;
  /**
   * Several racks and shards in one batch read, and the machines named by `machineIds` in the same read (strongly
   * consistent); those not stored yet are left out.
   */
  getSummaryItems(
    racks: Array<{ machineType: string; rack: string }>,
    shards: Array<{ machineType: string; shard: number }>,
    machineIds?: readonly string[],
  ): Promise<{ racks: RackAggregate[]; shards: SummaryShard[]; machines: Map<string, Machine> }>;
  /**
   * Every counter shard: a bounded read (types x shards), whatever the fleet's size. Without `nvlinkDomains`, the
   * shards' `domainCounters` are left out of the read.
   */
  summaryShards(options?: { nvlinkDomains?: boolean }): Promise<SummaryShard[]>;
  /** One type's racks with their machines' entries, grouped by counter shard (or one shard's), by rack name within. */
  listRackAggregates(machineType: string, page: PageRequest & { shard?: number | undefined }): Promise<Page<RackAggregate>>;
  /** Tenant orgs' capacity (domain/capacity/org-capacity.ts): records of several kinds in one strongly consistent batch read. */
  getCapacityItems(ids: CapacityItemIds): Promise<CapacityItems>;
  /** One org's counter shards: a bounded read, whatever the org holds. */
  orgCapacityShards(org: string): Promise<OrgCapacityShard[]>;
  /** The orgs that have capacity counters. */
  capacityOrgs(): Promise<string[]>;
  /** One org's capacity points (domain/capacity/capacity-history.ts) from `since` on, oldest first. */
  listCapacityPoints(org: string, since: string, page: PageRequest): Promise<Page<CapacityPoint>>;
  /** Which of `orgs` have a capacity point at `at`. */
  orgsWithCapacityPoint(orgs: readonly string[], at: string): Promise<Set<string>>;
  /** An org's delivered machines' node records, ordered by counter shard and machine id (or one shard's); the index may lag. */
  listCapacityNodes(org: string, page: PageRequest & { shard?: number | undefined }): Promise<Page<CapacityNode>>;
  /** The last `seq` of each org's capacity-events feed (0 for one without entries): one strongly consistent Query each. */
  capacityFeedHeads(orgs: readonly string[]): Promise<Map<string, number>>;
  /** Up to `limit` entries of an org's capacity-events feed from `seq` `after + 1` on, in `seq` order: one strongly consistent Query. */
  capacityFeedAfter(org: string, after: number, limit: number): Promise<CapacityFeedEntry[]>;
  /** What the sweep must look at: records whose due time has come (at or before `now`), earliest first. */
  dueEntities(now: Date, page: PageRequest): Promise<Page<DueEntry>>;

  /** Store the agent's roster time, guarded by version (or by nothing stored yet). */
  putSiteHeartbeat(before: SiteHeartbeat | null, after: Omit<SiteHeartbeat, 'version'>): Promise<SiteHeartbeat>;
  /**
   * Commit one decision all-or-nothing: every record guarded by the version it was read at (or by not existing
   * yet), history entries alongside. A lost race raises StaleWriteError and changes nothing.
   */
  commit(change: Change): Promise<void>;
  /**
   * Write machines just read as absent, in batches (BatchWriteItem): no guard, so only for new records nobody else
   * can have written since (a concurrent registration of the same id writes the same kind of new record). Not
   * all-or-nothing: a crash leaves some written, and registering again writes the rest.
   */
  createMachines(machines: Machine[]): Promise<void>;
  /** Record an event's delivery once: false when a marker for `eventId` already exists (nothing is written then). */
  recordEventDelivery(eventId: string, delivered: HistoryEntry): Promise<boolean>;
  /** Of these event ids, those whose delivery is recorded (BatchGetItem of their markers). */
  deliveredEventIds(eventIds: string[]): Promise<Set<string>>;
  /** One UTC day's outbox entries inside `window`, oldest first, paged: one Query of the eventsByDay index. */
  outboxEntriesOfDay(day: string, window: OutboxWindow, page: PageRequest): Promise<Page<PositionedOutboxEntry>>;
  getOutboxCursor(): Promise<OutboxCursor | null>;
  /** Move the cursor on, guarded by the version read (null: none stored); a rival's move in between: StaleWriteError. */
  putOutboxCursor(before: OutboxCursor | null, through: string): Promise<void>;
}
