import type { Catalog } from './catalog.ts';
import type { HistoryEntry, Instance, Machine, Tenant } from './model.ts';

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
  catalog?: Versioned<Catalog>;
  /** New machines must be matched against the agent's roster: make the next heartbeat compare it afresh. */
  resetHeartbeatRoster?: boolean;
  history: HistoryEntry[];
}

export const isEmpty = (change: Change): boolean =>
  !change.machines?.length && !change.instances?.length && !change.tenants?.length && change.history.length === 0;
