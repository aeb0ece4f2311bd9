import type { MetaInstance } from '#domain/core/model.ts';
import type { Aggregate } from '#store/aggregate.ts';
import {
  fromMetaInstanceItem,
  META_LISTING,
  metaInstanceItem,
  metaInstanceKey,
  metaInstancesOfOrg,
  waitingPartition,
} from '#store/aggregates/meta-instance-items.ts';
import type { ItemQuery } from '#store/item-access.ts';
import { listingPartitions } from '#store/item-codec.ts';
import { readMerged } from '#store/item-reads.ts';
import { LEGACY_META_KIND } from '#store/legacy-layout.ts';
import type { Page } from '#store/paging.ts';
import type { PageRequest } from '#store/port.ts';
import { indexes } from '#store/table.ts';

export interface MetaInstanceStore {
  getMetaInstance(id: string): Promise<MetaInstance | null>;
  /** Newest first; one org's, or the whole site's when `org` is null. */
  listMetaInstances(org: string | null, page: PageRequest): Promise<Page<MetaInstance>>;
  /** Meta-instances waiting for machines of a type, oldest first: they get freed machines in order. */
  waitingMetaInstances(machineType: string, limit: number): Promise<MetaInstance[]>;
}

export const metaInstances: Aggregate<MetaInstanceStore> = {
  writes: (change, to) => {
    for (const pair of change.metaInstances ?? []) to.guarded(pair, (meta) => metaInstanceItem(meta, to.due.metaInstance(meta)));
  },
  store: ({ items, layout }) => ({
    async getMetaInstance(id) {
      const item = await items.getItem(metaInstanceKey(id));
      return item ? (await layout.withMembers([fromMetaInstanceItem(item)]))[0]! : null;
    },

    /** An org's, one partition; every org's, the listing shards (listingPartitions) merged newest first. */
    async listMetaInstances(org, page) {
      const result = org
        ? await items.queryItems({ index: indexes.byOrg, partition: metaInstancesOfOrg(org), descending: true, limit: page.limit }, page.nextToken)
        : await readMerged(
            items,
            'meta-instances',
            [...(await layout.legacyPartitions(LEGACY_META_KIND)), ...listingPartitions(META_LISTING)].map(
              (partition): ItemQuery => ({ index: indexes.byKind, partition, descending: true }),
            ),
            page,
          );
      return { items: await layout.withMembers(result.items.map(fromMetaInstanceItem)), nextToken: result.nextToken };
    },

    async waitingMetaInstances(machineType, limit) {
      const result = await items.queryItems({ index: indexes.waiting, partition: waitingPartition(machineType), limit });
      return layout.withMembers(result.items.map(fromMetaInstanceItem));
    },
  }),
};
