import type { AuditEntry } from '#domain/events/audit.ts';
import type { Item } from '#store/item-access.ts';
import { strip } from '#store/item-codec.ts';

export const AUDIT_KIND = 'AUDIT';
export const auditTargetPartition = (target: string) => `AUDIT#${target}`;
export const auditActorPartition = (actor: string) => `ACTOR#${actor}`;

export const auditKeys = {
  audit: (target: string, at: string, unique: string) => ({ pk: auditTargetPartition(target), sk: `${at}#${unique}` }),
};

/**
 * An audit entry is in three places, each read by one Query and sorted by time: its target's partition of the
 * table (pk `AUDIT#<target>`), the byKind index (kind `AUDIT`: every entry) and the auditByActor index. Keys end
 * in a unique suffix so entries of the same instant never overwrite each other.
 */
export function auditItem(entry: AuditEntry, unique: string): Item {
  const key = auditKeys.audit(entry.target, entry.at, unique);
  return { ...key, entity: 'audit', kind: AUDIT_KIND, kindSk: key.sk, actorPk: auditActorPartition(entry.actor), actorSk: key.sk, ...entry };
}

export const fromAuditItem = (item: Item): AuditEntry => strip<AuditEntry>(item);
