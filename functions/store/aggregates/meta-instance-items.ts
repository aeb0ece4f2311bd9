import type { MetaInstance } from '#domain/core/model.ts';
import { dueAttributes } from '#store/aggregates/due.ts';
import type { Item } from '#store/item-access.ts';
import { listingPartitionOf, strip } from '#store/item-codec.ts';

// A meta-instance's item: listed (byKind over LISTING_SHARDS partitions, byOrg under its org) until deleted, in the
// due index while something about it is due, in `waiting` while it waits for machines of its type.

export const metaInstanceKey = (id: string) => ({ pk: `META#${id}`, sk: '#META' });

export const META_LISTING = 'META';
export const metaInstancesOfOrg = (org: string): string => `ORG#${org}#META`;
export const waitingPartition = (machineType: string): string => `WAIT#${machineType}`;

export function metaInstanceItem(meta: MetaInstance, dueAt: string | undefined): Item {
  const listed = meta.status !== 'Deleted';
  const waiting = meta.status === 'Placing' || meta.status === 'Retrying';
  return {
    ...metaInstanceKey(meta.id),
    entity: 'meta-instance',
    ...(listed
      ? {
          kind: listingPartitionOf(META_LISTING, meta.id),
          kindSk: `${meta.createdAt}#${meta.id}`,
          orgPk: metaInstancesOfOrg(meta.org),
          orgSk: `${meta.createdAt}#${meta.id}`,
        }
      : {}),
    ...dueAttributes(metaInstanceKey(meta.id).pk, dueAt),
    ...(waiting ? { waitPk: waitingPartition(meta.machineType), waitSk: `${meta.waitingSince ?? meta.createdAt}#${meta.id}` } : {}),
    ...meta,
  };
}

/**
 * A meta-instance as stored; one that release 0.1.0 wrote has no `memberIds` yet (its members carry `memberOf`),
 * which the store fills from the legacy members index before anyone sees it (layout.ts `withMembers`).
 */
export const fromMetaInstanceItem = (item: Item): MetaInstance => strip<MetaInstance>(item);
