import type { RosterBucket, RosterDigests, StaleCheck } from '#domain/machines/heartbeat.ts';
import type { Aggregate } from '#store/aggregate.ts';
import {
  fromRosterBucketItem,
  fromStaleCheckItem,
  rosterBucketItem,
  rosterDigestsItem,
  rosterDigestsOf,
  rosterKeys,
  staleCheckItem,
} from '#store/aggregates/roster-items.ts';

export interface RosterStore {
  /** The roster buckets stored (BatchGetItem), by bucket id; a bucket never written is left out. */
  getRosterBuckets(ids: string[]): Promise<Map<string, RosterBucket>>;
  getRosterDigests(): Promise<RosterDigests | null>;
  getStaleCheck(id: string): Promise<StaleCheck | null>;
}

export const roster: Aggregate<RosterStore> = {
  writes: (change, to) => {
    for (const pair of change.rosterBuckets ?? []) to.guarded(pair, (bucket) => rosterBucketItem(bucket, to.due.rosterBucket(bucket)));
    if (change.rosterDigests) to.guarded(change.rosterDigests, rosterDigestsItem);
    for (const pair of change.staleChecks ?? []) to.guarded(pair, staleCheckItem);
  },
  store: ({ items, layout }) => ({
    async getRosterBuckets(ids) {
      const found = await items.getItems([...new Set(ids)].map(rosterKeys.rosterBucket));
      return new Map(found.map((item) => [String(item.id), fromRosterBucketItem(item)]));
    },
    async getRosterDigests() {
      await layout.legacyReads();
      const item = await items.getItem(rosterKeys.siteRosterDigests);
      return item ? rosterDigestsOf(item) : null;
    },
    async getStaleCheck(id) {
      const item = await items.getItem(rosterKeys.staleCheck(id));
      return item ? fromStaleCheckItem(item) : null;
    },
  }),
};
