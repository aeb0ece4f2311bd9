import { iso } from '#domain/core/time.ts';

/** Who asked for a provider action: the token's subject and the API request that carried it. */
export interface Requester {
  actor: string;
  requestId: string;
}

/**
 * One provider action, written in the transaction that makes it. `target` names the resource the action was made
 * on as its API path below /admin (`machines/m-1`, `tenants/acme`, `safety/repair-storm`, `machines` for a
 * registration); `before` and `after` are what the action changed, as JSON.
 */
export interface AuditEntry {
  at: string;
  actor: string;
  action: AuditAction;
  target: string;
  before?: unknown;
  after?: unknown;
  requestId: string;
}

export type AuditAction =
  | 'health-override-added'
  | 'health-override-removed'
  | 'labels-changed'
  | 'tenant-capabilities-set'
  | 'tenant-quotas-set'
  | 'held-back-repair-handed-over'
  | 'repair-storm-reset'
  | 'machines-registered'
  | 'maintenance-declared'
  | 'maintenance-cancelled'
  | 'maintenance-resumed'
  | 'maintenance-deferral-decided'
  | 'validation-requested'
  | 'machine-retired'
  | 'reservation-created'
  | 'reservation-released';

export const auditTargets = {
  machine: (id: string) => `machines/${id}`,
  tenant: (org: string) => `tenants/${org}`,
  repairStorm: 'safety/repair-storm',
  registration: 'machines',
  maintenance: (id: string) => `maintenance/${id}`,
  reservation: (id: string) => `reservations/${id}`,
};

export function auditEntry(by: Requester, now: Date, action: AuditAction, target: string, change: { before?: unknown; after?: unknown }): AuditEntry {
  return {
    at: iso(now),
    actor: by.actor,
    action,
    target,
    ...(change.before === undefined ? {} : { before: change.before }),
    ...(change.after === undefined ? {} : { after: change.after }),
    requestId: by.requestId,
  };
}

// What a Change carries of this file's records (core/change.ts).
declare module '#domain/core/change.ts' {
  interface Change {
    /** The provider action this change is, if it is one: written as its own item in the same transaction. */
    audit?: AuditEntry;
  }
}
