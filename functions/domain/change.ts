import type { Catalog } from './catalog.ts';
import type { RackAggregate, SummaryShard } from './fleet-summary.ts';
import type { SafetyState } from './safety.ts';
import type { HistoryEntry, Instance, Machine, MetaInstance, Tenant } from './model.ts';

/** A record as it was read (null when new) and as the decision wants it; the store guards on `before.version`. */
export interface Versioned<T> {
  before: T | null;
  after: T;
}

/** Everything one decision changes. The store commits it as ONE conditional transaction, history included. */
export interface Change {
  machines?: Versioned<Machine>[];
  instances?: Versioned<Instance>[];
  tenants?: Versioned<Tenant>[];
  metaInstances?: Versioned<MetaInstance>[];
  catalog?: Versioned<Catalog>;
  safety?: Versioned<SafetyState>;
  /** New machines must be matched against the agent's roster: make the next heartbeat compare it afresh. */
  resetHeartbeatRoster?: boolean;
  /** The fleet summary's aggregates (domain/fleet-summary.ts): a rack's entries and its shard's counters together. */
  fleetSummary?: { racks: Versioned<RackAggregate>[]; shards: Versioned<SummaryShard>[] };
  history: HistoryEntry[];
}

/** Several decisions committed as one. Records must not repeat: each is guarded by the version it was read at. */
export function mergeChanges(...changes: Change[]): Change {
  return {
    machines: changes.flatMap((c) => c.machines ?? []),
    instances: changes.flatMap((c) => c.instances ?? []),
    tenants: changes.flatMap((c) => c.tenants ?? []),
    metaInstances: changes.flatMap((c) => c.metaInstances ?? []),
    history: changes.flatMap((c) => c.history),
    ...(changes.find((c) => c.safety) ? { safety: changes.find((c) => c.safety)!.safety! } : {}),
    ...(changes.find((c) => c.catalog) ? { catalog: changes.find((c) => c.catalog)!.catalog! } : {}),
    ...(changes.some((c) => c.resetHeartbeatRoster) ? { resetHeartbeatRoster: true } : {}),
  };
}
