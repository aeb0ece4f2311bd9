import { keyHash } from '#store/key-hash.ts';

// What every record kind's codec shares: the attributes the table and its indexes key on, which no record carries,
// and the listing shards several kinds spread their entries over.

const KEY_ATTRIBUTES = [
  'pk',
  'sk',
  'kind',
  'kindSk',
  'allocPk',
  'allocSk',
  'allocNvlPk',
  'allocNvlSk',
  'orgPk',
  'orgSk',
  'duePk',
  'dueAt',
  'repairPk',
  'repairSince',
  'waitPk',
  'waitSk',
  'replacingPk',
  'replacingSk',
  'actorPk',
  'actorSk',
  'eventDayPk',
  'eventDaySk',
  'entity',
];

/** The record an item holds: the item without its table and index keys. */
export function strip<T>(item: Record<string, unknown>): T {
  const record = { ...item };
  for (const attribute of KEY_ATTRIBUTES) delete record[attribute];
  return record as T;
}

export const shardKey = (shard: number): string => String(shard).padStart(2, '0');

/**
 * A listing, newest first, spread over LISTING_SHARDS partitions (`<listing>#<nn>`, by a hash of the record's id) and
 * read by merging them: an org's instances in byOrg (every change of an instance rewrites its entry, the index
 * projecting the whole item, and one key per org took every change of a large tenant's instances), and every
 * meta-instance in byKind (a burst of creates, one entry each, took one key).
 */
export const LISTING_SHARDS = 16;
export const listingPartitions = (listing: string): string[] => Array.from({ length: LISTING_SHARDS }, (_, shard) => `${listing}#${shardKey(shard)}`);
export const listingPartitionOf = (listing: string, id: string): string => `${listing}#${shardKey(keyHash(id) % LISTING_SHARDS)}`;
