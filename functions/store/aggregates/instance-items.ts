import type { Instance } from '#domain/core/model.ts';
import { dueAttributes } from '#store/aggregates/due.ts';
import type { Item } from '#store/item-access.ts';
import { listingPartitionOf, strip } from '#store/item-codec.ts';

// An instance's item: in its org's listing (byOrg, over LISTING_SHARDS partitions), in the due index while something
// about it is due, in `replacing` while it is a replacement still provisioning (what the site-wide cap counts).

export const instanceKey = (id: string) => ({ pk: `INSTANCE#${id}`, sk: '#INSTANCE' });

export const instanceListing = (org: string): string => `ORG#${org}#INSTANCE`;
export const REPLACING_PARTITION = 'REPLACING';

export function instanceItem({ usageUncounted: _counted, ...instance }: Instance, dueAt: string | undefined): Item {
  return {
    ...instanceKey(instance.id),
    entity: 'instance',
    orgPk: listingPartitionOf(instanceListing(instance.org), instance.id),
    orgSk: `${instance.createdAt}#${instance.id}`,
    ...dueAttributes(instanceKey(instance.id).pk, dueAt),
    ...(instance.replacement && instance.status === 'Provisioning'
      ? { replacingPk: REPLACING_PARTITION, replacingSk: `${instance.createdAt}#${instance.id}` }
      : {}),
    // Its org's usage counter counts it (domain/reservations/quotas.ts): what tells it from an instance 0.1.0 wrote.
    quotaCounted: true,
    ...instance,
  };
}

export function fromInstanceItem(item: Item): Instance {
  // A member's legacy `memberOf` stays on it until the contract migration: release 0.1.0, running beside this one
  // for the length of a deploy, still finds members by it.
  const { quotaCounted, ...instance } = strip<Instance & { quotaCounted?: true }>(item);
  return quotaCounted === true ? instance : { ...instance, usageUncounted: true };
}
