import { keyHash } from '#store/key-hash.ts';
import type { Aggregate } from '#store/aggregate.ts';
import type { Item, ItemQuery } from '#store/item-access.ts';
import { readMerged } from '#store/item-reads.ts';
import { LEGACY_DUE_PARTITION } from '#store/legacy-layout.ts';
import type { Page } from '#store/paging.ts';
import type { DueEntry, PageRequest } from '#store/port.ts';
import { indexes } from '#store/table.ts';

// The due index: what the sweep must look at. Records of several kinds enter it with their due time (DueTimes in
// port.ts), each through its own codec's `dueAttributes`; the sweep reads it here.

/**
 * The due index's partition keys. Every write that puts a record in the index, moves its time or takes it out
 * writes one of them: spread over shards by a hash of the entry (the record's key and due time). Their number is
 * fixed, so each one's write rate grows with the fleet: the tenants' churn (an instance's create and a machine's
 * cleanup each enter, move and leave the index) at 100,000 machines needs 128 to keep a shard under the heat goal
 * of 500 write units a second (docs/design.md, "What AWS does that DynamoDB Local does not"). The sweep reads every
 * shard, a Query each, in parallel. Named `DUE#00`…`DUE#127`: the names of fewer shards are among them, so an entry
 * written under a smaller count is still read.
 */
export const DUE_SHARDS = 128;
export const duePartitions: readonly string[] = Array.from({ length: DUE_SHARDS }, (_, shard) => `DUE#${String(shard).padStart(2, '0')}`);

/**
 * By the record's partition key and due time: an entry stays in its shard until its time moves, and a record's
 * successive entries (a create pending, then its call's lease, often within one second) fall on different shards,
 * so the writes that put and take out each of them are not all one key's.
 */
export const duePartitionOf = (pk: string, dueAt: string): string => duePartitions[keyHash(`${pk}#${dueAt}`) % DUE_SHARDS]!;

/** The due index's attributes of a record due at `dueAt`; none when nothing is due. */
export const dueAttributes = (pk: string, dueAt: string | undefined): Item => (dueAt ? { duePk: duePartitionOf(pk, dueAt), dueAt } : {});

/** The records the due index holds, by the prefix of their partition key. */
const dueEntityOfPrefix: Record<string, string> = {
  MACHINE: 'machine',
  INSTANCE: 'instance',
  META: 'meta-instance',
  ROSTER: 'roster-bucket',
  MAINTENANCE: 'maintenance',
  RESERVATION: 'reservation',
};

/**
 * What a due-index entry points at: the record's own entity and id (the sweep delivers it to its watchers again),
 * read from its table key, which is all the keys-only index holds.
 */
export function dueEntryOf(entry: Item): DueEntry {
  const pk = String(entry.pk);
  const at = pk.indexOf('#');
  const entity = dueEntityOfPrefix[pk.slice(0, at)];
  if (at < 0 || entity === undefined) throw new Error(`the due index holds ${pk}, which is no record the sweep knows`);
  return { entity, id: pk.slice(at + 1) };
}

export interface DueStore {
  /** What the sweep must look at: records whose due time has come (at or before `now`), earliest first. */
  dueEntities(now: Date, page: PageRequest): Promise<Page<DueEntry>>;
}

export const due: Aggregate<DueStore> = {
  store: ({ items, layout }) => ({
    /** Costs what is due, not what the fleet holds: one Query of each due shard (keys only), merged by due time. */
    async dueEntities(now, page) {
      const sort = { atMost: now.toISOString() };
      const partitions = [...(await layout.legacyPartitions(LEGACY_DUE_PARTITION)), ...duePartitions];
      const queries = partitions.map((partition): ItemQuery => ({ index: indexes.due, partition, sort, entriesOnly: true }));
      const result = await readMerged(items, 'due', queries, page);
      return { items: result.items.map(dueEntryOf), nextToken: result.nextToken };
    },
  }),
};
