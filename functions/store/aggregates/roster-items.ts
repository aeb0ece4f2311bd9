import type { RosterBucket, RosterDigests, StaleCheck } from '#domain/machines/heartbeat.ts';
import { dueAttributes } from '#store/aggregates/due.ts';
import { siteItem } from '#store/aggregates/site-items.ts';
import type { Item } from '#store/item-access.ts';
import { strip } from '#store/item-codec.ts';

// The site agent's roster (domain/machines/heartbeat.ts): its buckets, a key each and in the due index while one falls due,
// the site's digests of them, and the stale checks.

export const rosterKeys = {
  rosterBucket: (id: string) => ({ pk: `ROSTER#${id}`, sk: '#ROSTER' }),
  staleCheck: (id: string) => ({ pk: `STALE-CHECK#${id}`, sk: '#STALE-CHECK' }),
  siteRosterDigests: siteItem('ROSTER'),
};

export function rosterBucketItem(bucket: RosterBucket, dueAt: string | undefined): Item {
  return { ...rosterKeys.rosterBucket(bucket.id), entity: 'roster-bucket', ...dueAttributes(rosterKeys.rosterBucket(bucket.id).pk, dueAt), ...bucket };
}

export const staleCheckItem = (check: StaleCheck): Item => ({ ...rosterKeys.staleCheck(check.id), entity: 'stale-check', ...check });

export const rosterDigestsItem = (digests: RosterDigests): Item => ({ ...rosterKeys.siteRosterDigests, ...digests });

export const fromRosterBucketItem = (item: Item): RosterBucket => strip<RosterBucket>(item);
export const fromStaleCheckItem = (item: Item): StaleCheck => strip<StaleCheck>(item);

export const rosterDigestsOf = (item: Item): RosterDigests => ({
  buckets: item.buckets as RosterDigests['buckets'],
  ...(typeof item.nextStaleAt === 'string' ? { nextStaleAt: item.nextStaleAt } : {}),
  version: Number(item.version),
});
