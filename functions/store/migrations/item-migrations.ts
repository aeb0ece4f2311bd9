import type { Instance, Machine, MetaInstance } from '#domain/core/model.ts';
import type { RosterBucket } from '#domain/machines/heartbeat.ts';
import { COUNTED } from '#domain/reservations/quotas.ts';
import type { Item, TableKey } from '#store/item-access.ts';
import { fromInstanceItem, instanceItem } from '#store/aggregates/instance-items.ts';
import { fromMachineItem, machineItem } from '#store/aggregates/machine-items.ts';
import { fromMetaInstanceItem, metaInstanceItem } from '#store/aggregates/meta-instance-items.ts';
import { fromRosterBucketItem, rosterBucketItem } from '#store/aggregates/roster-items.ts';
import { keys } from '#store/keys.ts';
import { isLegacySummaryItem, LEGACY_MEMBER_ATTRIBUTES, LEGACY_SITE_ITEMS } from '#store/legacy-layout.ts';
import type { DueTimes } from '#store/port.ts';

/** What one item needs to be in the current layout: a versioned rewrite, a usage count, or its removal. */
export interface ItemMigration {
  /** The item as it must be, written only while the stored one still has `expectedVersion` (none: still exists). */
  put?: Item;
  expectedVersion?: number;
  /** Count a live instance that release 0.1.0 wrote in its org's usage, in the same transaction. */
  countUsage?: { key: TableKey; org: string; machineType: string };
  /** 0.1.0's own items that nothing reads any more (contract only). */
  remove?: TableKey;
  /** A quota usage shard 0 holds whole, to be dealt over the (org, type)'s shards (domain/reservations/quota-shards.ts). */
  dealQuota?: { org: string; machineType: string };
}

export interface MigrationInput {
  /** The meta-instance's members from 0.1.0's members index, for one without `memberIds`. */
  membersOf(metaInstanceId: string): Promise<string[]>;
  due: DueTimes;
}

/** Shard 0 of a usage whose quota it holds whole, as releases before 0.3.0 wrote every quota. */
const heldWhole = (item: Item): boolean => item.shard === undefined && typeof item.quota === 'number' && item.quotaTotal === undefined;

/** The attributes an item's place in the table and its indexes derive from; nothing else of it ever changes here. */
const layoutOf = (item: Item): string =>
  JSON.stringify(
    Object.entries(item)
      .filter(
        ([name]) =>
          !['version'].includes(name) &&
          (name.endsWith('Pk') || name.endsWith('Sk') || ['kind', 'dueAt', 'allocSk', 'quotaCounted', 'memberOf', 'memberIds'].includes(name)),
      )
      .sort(([a], [b]) => a.localeCompare(b)),
  );

const rewritten = (stored: Item, next: Item): ItemMigration | null =>
  layoutOf(stored) === layoutOf(next) ? null : { put: { ...next, version: Number(stored.version) + 1 }, expectedVersion: Number(stored.version) };

const withoutLegacyMembers = (item: Item): Item => {
  const copy = { ...item };
  for (const name of LEGACY_MEMBER_ATTRIBUTES) delete copy[name];
  return copy;
};

/**
 * What migrations 2 (expand) and 3 (contract) do to one stored item: its record decoded and encoded again by the
 * current codec, written when its layout differs. Null when the item is already as it must be; so running it twice,
 * or over items the current release wrote, changes nothing.
 */
export async function migrateItem(stored: Item, input: MigrationInput, contract: boolean): Promise<ItemMigration | null> {
  const pk = String(stored.pk);
  if (contract && (isLegacySummaryItem(pk) || LEGACY_SITE_ITEMS.some((site) => site.legacy.pk === pk && site.legacy.sk === stored.sk))) {
    return { remove: { pk, sk: String(stored.sk) } };
  }
  const strip = contract ? withoutLegacyMembers : (item: Item) => item;
  switch (stored.entity) {
    case 'machine': {
      const machine: Machine = fromMachineItem(stored);
      return rewritten(stored, strip(machineItem(machine, input.due.machine(machine))));
    }
    case 'instance': {
      const instance: Instance = fromInstanceItem(stored);
      // A live member keeps its `memberOf` through the contract: a meta-instance that 0.1.0 wrote during the deploy
      // has no memberIds yet, and the contract reads them from the members index, in whatever order it walks.
      const next = instanceItem(instance, input.due.instance(instance));
      const migration = rewritten(stored, instance.status === 'Terminated' ? strip(next) : next);
      if (!migration || instance.usageUncounted !== true || !COUNTED.has(instance.status)) return migration;
      return { ...migration, countUsage: { key: keys.quotaUsage(instance.org, instance.machineType), org: instance.org, machineType: instance.machineType } };
    }
    case 'meta-instance': {
      const found: MetaInstance = fromMetaInstanceItem(stored);
      // Until the contract the members index is the membership both releases kept (legacy-layout.ts inLegacyLayout).
      const meta = contract && Array.isArray(found.memberIds) ? found : { ...found, memberIds: await input.membersOf(found.id) };
      return rewritten(stored, metaInstanceItem(meta, input.due.metaInstance(meta)));
    }
    case 'quota-usage':
      return heldWhole(stored) ? { dealQuota: { org: String(stored.org), machineType: String(stored.machineType) } } : null;
    case 'roster-bucket': {
      const bucket: RosterBucket = fromRosterBucketItem(stored);
      return rewritten(stored, rosterBucketItem(bucket, input.due.rosterBucket(bucket)));
    }
    default:
      return null;
  }
}
