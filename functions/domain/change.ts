import type { AuditEntry } from '#domain/audit.ts';
import type { Catalog } from '#domain/catalog.ts';
import type { RackAggregate, SummaryShard } from '#domain/fleet-summary.ts';
import type { CapacityNode, OrgCapacityShard } from '#domain/org-capacity.ts';
import type { SafetyState } from '#domain/safety.ts';
import type { RosterBucket, RosterDigests, StaleCheck } from '#domain/heartbeat.ts';
import type { SiteHistoryEntry } from '#domain/site-agent-silence.ts';
import type { HistoryEntry, Instance, Machine, MetaInstance, Tenant } from '#domain/model.ts';

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
  catalog?: Versioned<Catalog>;
  safety?: Versioned<SafetyState>;
  /** The agent's roster, by bucket (see heartbeat.ts). */
  rosterBuckets?: Versioned<RosterBucket>[];
  rosterDigests?: Versioned<RosterDigests>;
  staleChecks?: Versioned<StaleCheck>[];
  /** The fleet summary's aggregates (domain/fleet-summary.ts): a rack's entries and its shard's counters together. */
  fleetSummary?: { racks: Versioned<RackAggregate>[]; shards: Versioned<SummaryShard>[] };
  /** Tenant orgs' capacity (domain/org-capacity.ts): machines' node items and their orgs' counter shards together. */
  orgCapacity?: { nodes: Versioned<CapacityNode>[]; shards: Versioned<OrgCapacityShard>[] };
  history: HistoryEntry[];
  /** The provider action this change is, if it is one: written as its own item in the same transaction. */
  audit?: AuditEntry;
  /** Site-level entries (events about the site), each written only if its key is new. */
  siteHistory?: SiteHistoryEntry[];
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
    ...(changes.find((c) => c.safety) ? { safety: changes.find((c) => c.safety)!.safety! } : {}),
    ...(changes.find((c) => c.catalog) ? { catalog: changes.find((c) => c.catalog)!.catalog! } : {}),
  };
}
