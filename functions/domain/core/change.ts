import type { HistoryEntry, Instance, Machine, MetaInstance, ReplacementsInFlight, Tenant } from '#domain/core/model.ts';

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
 *
 * The records every capability writes are named here. A capability's own records (the safety state, the catalog,
 * rosters, the fleet summary, maintenance, reservations, quotas, capacity, audit and site entries) are added to
 * this interface where they are defined, by a `declare module` block beside them: the base names no capability, so
 * the domain's folders depend one way (core at the bottom), and the store still sees one Change with every field.
 */
export interface Change {
  machines?: Versioned<Machine>[];
  instances?: Versioned<Instance>[];
  tenants?: Versioned<Tenant>[];
  metaInstances?: Versioned<MetaInstance>[];
  /** The site's meta-instance replacements in flight, when a placement of replacements adds to them. */
  replacements?: Versioned<ReplacementsInFlight>;
  history: HistoryEntry[];
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
