import type { TableKey } from '#store/item-access.ts';

// Release 0.1.0's layout (releases/0.1.0.json, commit 1557cba): where its items sit that the current layout keeps
// elsewhere. While the table may still hold such items (its data version below CONTRACTED_DATA_VERSION, see
// migrations/registry.ts) every listing also reads these partitions, so nothing written by 0.1.0 is missed before
// the migration has moved it (expand); the contract migration ends that (docs/design.md, "Upgrades").

/** Every machine, one byKind partition (now one per rack, `MACHINE#<rack>`). */
export const LEGACY_MACHINE_KIND = 'MACHINE';
/** Every meta-instance, one byKind partition (now LISTING_SHARDS of them). */
export const LEGACY_META_KIND = 'META';
/** The sweep's queue, one partition (now DUE_SHARDS). */
export const LEGACY_DUE_PARTITION = 'DUE';
/** A type's free machines, one partition, sort key `<rack>#<machine id>` (now one per rack). */
export const legacyAllocatablePartition = (machineType: string): string => `ALLOC#${machineType}`;
/** An org's instances, one partition (now LISTING_SHARDS of them). */
export const legacyInstanceListing = (org: string): string => `ORG#${org}#INSTANCE`;

/** The site's own items, all under pk `SITE` (now each under a key of its own): legacy key → current key's name. */
export const LEGACY_SITE_ITEMS: ReadonlyArray<{ legacy: TableKey; name: 'CATALOG' | 'HEARTBEAT' | 'ROSTER' | 'SAFETY' }> = [
  { legacy: { pk: 'SITE', sk: 'CATALOG' }, name: 'CATALOG' },
  { legacy: { pk: 'SITE', sk: 'HEARTBEAT' }, name: 'HEARTBEAT' },
  { legacy: { pk: 'SITE', sk: 'ROSTER' }, name: 'ROSTER' },
  { legacy: { pk: 'SITE', sk: 'SAFETY' }, name: 'SAFETY' },
];

/** The fleet summary's counters and rack aggregates, rebuilt under their own keys by the stream from the machines. */
export const isLegacySummaryItem = (pk: string): boolean => pk === 'SUMMARY' || pk.startsWith('SUMMARY-RACKS#');

/** A member instance's binding to its meta-instance in 0.1.0 (the `members` index); membership is now `memberIds`. */
export const LEGACY_MEMBER_ATTRIBUTES = ['memberOf', 'memberSk'] as const;
export const legacyMembersPartition = (metaInstanceId: string): string => `META#${metaInstanceId}`;

/** The entities release 0.1.0 knows: its sweep reads their due entries from `DUE`, and would fail on any other. */
const LEGACY_DUE_ENTITIES = new Set(['machine', 'instance', 'meta-instance', 'roster-bucket']);

/**
 * A current-layout item as release 0.1.0 writes it, for while the table is pinned to that layout (a deploy over 0.1.0
 * not yet declared done): both releases then see everything either writes. Attributes 0.1.0 does not know ride along;
 * it ignores them.
 */
export function inLegacyLayout(item: Record<string, unknown>): Record<string, unknown> {
  const legacy = { ...item };
  const entity = String(item.entity);
  if (typeof item.duePk === 'string' && LEGACY_DUE_ENTITIES.has(entity)) legacy.duePk = LEGACY_DUE_PARTITION;
  if (entity === 'machine') {
    legacy.kind = LEGACY_MACHINE_KIND;
    if (typeof item.allocPk === 'string' && item.allocPk.startsWith('ALLOC#')) legacy.allocPk = legacyAllocatablePartition(String(item.machineType));
  }
  if (entity === 'instance') {
    legacy.orgPk = legacyInstanceListing(String(item.org));
    delete legacy.memberOf;
    delete legacy.memberSk;
    if (typeof item.metaInstanceId === 'string' && item.status !== 'Terminated') {
      legacy.memberOf = legacyMembersPartition(item.metaInstanceId);
      legacy.memberSk = item.id;
    }
  }
  if (entity === 'meta-instance' && typeof item.kind === 'string') legacy.kind = LEGACY_META_KIND;
  return legacy;
}

/** The 0.1.0 key a site item of the current layout is mirrored to while the table is pinned; undefined for others. */
export function legacyTwinOf(key: TableKey): TableKey | undefined {
  return LEGACY_SITE_ITEMS.find((site) => key.pk === `SITE#${site.name}` && key.sk === `#${site.name}`)?.legacy;
}
