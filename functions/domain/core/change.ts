import type { AuditEntry } from '#domain/events/audit.ts';
import type { CapacityFeedEntry } from '#domain/capacity/capacity-events.ts';
import type { CapacityPoint } from '#domain/capacity/capacity-history.ts';
import type { Catalog } from '#domain/machines/catalog.ts';
import type { RackAggregate, SummaryShard } from '#domain/machines/fleet-summary.ts';
import type { Maintenance, OpenMaintenances } from '#domain/maintenance/maintenance.ts';
import type { CapacityNode, OrgCapacityShard } from '#domain/capacity/org-capacity.ts';
import type { SafetyState } from '#domain/repair/safety.ts';
import type { RosterBucket, RosterDigests, StaleCheck } from '#domain/machines/heartbeat.ts';
import type { SiteHistoryEntry } from '#domain/machines/site-agent-silence.ts';
import type { HistoryEntry, Instance, Machine, MetaInstance, ReplacementsInFlight, Tenant } from '#domain/core/model.ts';
import type { QuotaGuard } from '#domain/reservations/quotas.ts';
import type { Reservation } from '#domain/reservations/reservations.ts';

/** A record as it was read (null when new) and as the decision wants it; the store guards on `before.version`. */
export interface Versioned<T> {
  before: T | null;
  after: T;
}

/** The most items one transaction writes (DynamoDB's TransactWriteItems limit): records and history entries alike. */
export const MAX_TRANSACTION_ITEMS = 100;

/**
 * Everything one decision changes. The store commits it as ONE conditional transaction, history included (a change
 * that writes a single item, as one conditional PutItem: as atomic, at half the price).
 */
export interface Change {
  machines?: Versioned<Machine>[];
  instances?: Versioned<Instance>[];
  tenants?: Versioned<Tenant>[];
  metaInstances?: Versioned<MetaInstance>[];
  /** The site's meta-instance replacements in flight, when a placement of replacements adds to them. */
  replacements?: Versioned<ReplacementsInFlight>;
  catalog?: Versioned<Catalog>;
  safety?: Versioned<SafetyState>;
  /** The agent's roster, by bucket (see heartbeat.ts). */
  rosterBuckets?: Versioned<RosterBucket>[];
  rosterDigests?: Versioned<RosterDigests>;
  staleChecks?: Versioned<StaleCheck>[];
  /** The fleet summary's aggregates (domain/machines/fleet-summary.ts): a rack's entries and its shard's counters together. */
  fleetSummary?: { racks: Versioned<RackAggregate>[]; shards: Versioned<SummaryShard>[] };
  /** Declared maintenance (domain/maintenance/maintenance.ts), and the site's list of open ones that declarations commit against. */
  maintenances?: Versioned<Maintenance>[];
  openMaintenances?: Versioned<OpenMaintenances>;
  /** Capacity reservations (domain/reservations/reservations.ts), with the machines they claim or hand back. */
  reservations?: Versioned<Reservation>[];
  /** Tenant orgs' capacity (domain/capacity/org-capacity.ts): machines' node items and their orgs' counter shards together. */
  orgCapacity?: { nodes: Versioned<CapacityNode>[]; shards: Versioned<OrgCapacityShard>[] };
  /** Entries of orgs' capacity-events feeds, each written only while its org's `seq` is free. */
  capacityFeed?: CapacityFeedEntry[];
  history: HistoryEntry[];
  /** The provider action this change is, if it is one: written as its own item in the same transaction. */
  audit?: AuditEntry;
  /** Site-level entries (events about the site), each written only if its key is new. */
  siteHistory?: SiteHistoryEntry[];
  /** Points of orgs' capacity history (domain/capacity/capacity-history.ts), each written only if its interval has none. */
  capacityPoints?: CapacityPoint[];
  /**
   * The quotas the instances this change counts were decided against (domain/reservations/quotas.ts): each (org, type) whose usage
   * it raises commits only while that quota holds. The usage moves themselves follow from `instances`.
   */
  quotaGuards?: QuotaGuard[];
  /** Quotas the provider sets (a number) or lifts (null), per (org, type), on the usage items. */
  quotas?: Array<{ org: string; machineType: string; quota: number | null }>;
}

/**
 * Several decisions committed as one (never roster records: those are committed alone). Records must not repeat:
 * each is guarded by the version it was read at.
 */
export function mergeChanges(...changes: Change[]): Change {
  return {
    machines: changes.flatMap((c) => c.machines ?? []),
    instances: changes.flatMap((c) => c.instances ?? []),
    tenants: changes.flatMap((c) => c.tenants ?? []),
    metaInstances: changes.flatMap((c) => c.metaInstances ?? []),
    history: changes.flatMap((c) => c.history),
    quotaGuards: changes.flatMap((c) => c.quotaGuards ?? []),
    ...(changes.find((c) => c.safety) ? { safety: changes.find((c) => c.safety)!.safety! } : {}),
    ...(changes.find((c) => c.catalog) ? { catalog: changes.find((c) => c.catalog)!.catalog! } : {}),
    ...(changes.find((c) => c.replacements) ? { replacements: changes.find((c) => c.replacements)!.replacements! } : {}),
  };
}
