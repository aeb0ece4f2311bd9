import type { Instance } from '#domain/core/model.ts';
import type { Aggregate } from '#store/aggregate.ts';
import { fromInstanceItem, instanceItem, instanceKey, instanceListing, REPLACING_PARTITION } from '#store/aggregates/instance-items.ts';
import type { ItemQuery } from '#store/item-access.ts';
import { listingPartitions } from '#store/item-codec.ts';
import { readMerged } from '#store/item-reads.ts';
import { legacyInstanceListing } from '#store/legacy-layout.ts';
import type { Page } from '#store/paging.ts';
import type { PageRequest } from '#store/port.ts';
import { indexes } from '#store/table.ts';

export interface InstanceStore {
  getInstance(id: string): Promise<Instance | null>;
  /** One org's instances, newest first, optionally of one status. */
  listInstances(org: string, page: PageRequest & { status?: string | undefined }): Promise<Page<Instance>>;
  /**
   * Meta-instance replacements still provisioning, site-wide, as the `replacing` index counts them: for gauges and
   * views. The cap counts the replacements record (getRecords), which no index lag can make short.
   */
  replacementsInFlight(): Promise<number>;
}

export const instances: Aggregate<InstanceStore> = {
  writes: (change, to) => {
    for (const pair of change.instances ?? []) to.guarded(pair, (instance) => instanceItem(instance, to.due.instance(instance)));
  },
  store: ({ items, layout }) => ({
    async getInstance(id) {
      const item = await items.getItem(instanceKey(id));
      return item ? fromInstanceItem(item) : null;
    },

    /** Every one of the org's listing shards (listingPartitions), merged newest first. */
    async listInstances(org, page) {
      const where = page.status ? { where: { attribute: 'status', equals: page.status } } : {};
      const partitions = [...(await layout.legacyPartitions(legacyInstanceListing(org))), ...listingPartitions(instanceListing(org))];
      const queries = partitions.map((partition): ItemQuery => ({ index: indexes.byOrg, partition, descending: true, ...where }));
      const result = await readMerged(items, JSON.stringify(['instances', org, page.status ?? null]), queries, page);
      return { items: result.items.map(fromInstanceItem), nextToken: result.nextToken };
    },

    /** The replacing index holds only replacements still provisioning. */
    replacementsInFlight: () => items.countItems({ index: indexes.replacing, partition: REPLACING_PARTITION }),
  }),
};
