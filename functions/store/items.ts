import { inAllocatableIndex } from '#domain/core/health.ts';
import { repairStage } from '#domain/repair/stuck-repairs.ts';
import { keyHash } from '#store/key-hash.ts';
import type { DueEntry, PositionedOutboxEntry } from './port.ts';
import type { AuditEntry } from '#domain/events/audit.ts';
import type { OutboxEntry } from '#domain/events/events.ts';
import { SITE_SUBJECT, type SiteHistoryEntry } from '#domain/machines/site-agent-silence.ts';
import type { RosterBucket, RosterDigests, StaleCheck } from '#domain/machines/heartbeat.ts';
import type { Maintenance } from '#domain/maintenance/maintenance.ts';
import type { HistoryEntry, Instance, Machine, MetaInstance, Tenant } from '#domain/core/model.ts';
import { utcDay } from '#domain/core/time.ts';
import type { RackAggregate, SummaryShard } from '#domain/machines/fleet-summary.ts';
import type { Reservation } from '#domain/reservations/reservations.ts';

// Keys and item shapes of the single table. Index attributes are derived from the record on every write, so an
// item is in a sparse index exactly while its state says it belongs there; `dueAt` is given by the store's owner,
// from the reconcilers' due rules (DueTimes in port.ts; functions/reconcilers/registry.ts).

/**
 * Each of the site's own items under a key of its own: they are written by different work (registration, the roster,
 * the replacement cap, the sweep's lease), and sharing one partition key would add all of their writes up on it.
 */
export const siteItem = (name: string) => ({ pk: `SITE#${name}`, sk: `#${name}` });

export const keys = {
  machine: (id: string) => ({ pk: `MACHINE#${id}`, sk: '#MACHINE' }),
  instance: (id: string) => ({ pk: `INSTANCE#${id}`, sk: '#INSTANCE' }),
  metaInstance: (id: string) => ({ pk: `META#${id}`, sk: '#META' }),
  tenant: (org: string) => ({ pk: `TENANT#${org}`, sk: '#TENANT' }),
  /**
   * An org's usage counter shards and quotas (domain/reservations/quota-shards.ts), all in the org's partition: one Query reads an
   * org's, or one type's. Shard 0 keeps the key of the one counter releases before 0.3.0 wrote.
   */
  quotaUsage: (org: string, machineType: string, shard = 0) => ({ pk: quotaPartition(org), sk: `TYPE#${machineType}${shard === 0 ? '' : `#${shard}`}` }),
  /** A machine's history, or the site's (SITE_SUBJECT). */
  history: (machineId: string, at: string, unique: string) => ({
    pk: machineId === SITE_SUBJECT ? 'SITE' : `MACHINE#${machineId}`,
    sk: `HISTORY#${at}#${unique}`,
  }),
  siteHistory: (key: string) => ({ pk: 'SITE', sk: `HISTORY#${key}` }),
  historyPrefix: 'HISTORY#',
  eventDelivery: (eventId: string) => ({ pk: `EVENT#${eventId}`, sk: '#DELIVERED' }),
  audit: (target: string, at: string, unique: string) => ({ pk: auditTargetPartition(target), sk: `${at}#${unique}` }),
  rosterBucket: (id: string) => ({ pk: `ROSTER#${id}`, sk: '#ROSTER' }),
  staleCheck: (id: string) => ({ pk: `STALE-CHECK#${id}`, sk: '#STALE-CHECK' }),
  maintenance: (id: string) => ({ pk: `MAINTENANCE#${id}`, sk: '#MAINTENANCE' }),
  reservation: (id: string) => ({ pk: `RESERVATION#${id}`, sk: '#RESERVATION' }),
  siteOpenMaintenances: siteItem('MAINTENANCE'),
  siteHeartbeat: siteItem('HEARTBEAT'),
  siteRosterDigests: siteItem('ROSTER'),
  siteCatalog: siteItem('CATALOG'),
  siteSafety: siteItem('SAFETY'),
  siteReplacements: siteItem('REPLACEMENTS'),
  siteLease: (name: string) => siteItem(`LEASE#${name}`),
  /** How far the sweep's outbox fallback has looked (domain/events/outbox.ts). */
  siteOutboxCursor: siteItem('OUTBOX-CURSOR'),
  /**
   * One type's rack, a partition key of its own: a fleet-wide change rewrites every rack, and a key per rack keeps each
   * key's writes at its own machines' pace however many racks the fleet has. Read by key, the catalog naming a type's
   * racks: the rack map pages through them by name, the sweep's recount reads a shard's.
   */
  summaryRack: (machineType: string, rack: string) => ({ pk: `SUMMARY-RACK#${machineType}#${rack}`, sk: '#SUMMARY-RACK' }),
  /**
   * Each counter item its own partition: a fleet-wide change rewrites every counter item of a type, and one shared
   * key would take all of those writes. They are read by key (the catalog names the types): one batch read.
   */
  summaryShard: (machineType: string, shard: number) => ({ pk: `SUMMARY#${machineType}#${shardKey(shard)}`, sk: '#SUMMARY' }),
};

export const quotaPartition = (org: string): string => `QUOTA#${org}`;

/** The machine id of a machine's partition key (`keys.machine`). */
export const machineIdOfKey = (pk: string): string => pk.slice('MACHINE#'.length);

const shardKey = (shard: number): string => String(shard).padStart(2, '0');

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

/**
 * A listing, newest first, spread over LISTING_SHARDS partitions (`<listing>#<nn>`, by a hash of the record's id) and
 * read by merging them: an org's instances in byOrg (every change of an instance rewrites its entry, the index
 * projecting the whole item, and one key per org took every change of a large tenant's instances), and every
 * meta-instance in byKind (a burst of creates, one entry each, took one key).
 */
export const LISTING_SHARDS = 16;
export const listingPartitions = (listing: string): string[] => Array.from({ length: LISTING_SHARDS }, (_, shard) => `${listing}#${shardKey(shard)}`);
export const listingPartitionOf = (listing: string, id: string): string => `${listing}#${shardKey(keyHash(id) % LISTING_SHARDS)}`;
export const instanceListing = (org: string): string => `ORG#${org}#INSTANCE`;
export const META_LISTING = 'META';

const dueAttributes = (pk: string, dueAt: string | undefined): Item => (dueAt ? { duePk: duePartitionOf(pk, dueAt), dueAt } : {});
/**
 * Machines are in byKind under their rack: a registration writes a rack's machines together, and one kind for the
 * whole fleet would take every one of those writes on one key. A listing reads the catalog's racks one after another.
 */
export const machineKind = (rack: string): string => `MACHINE#${rack}`;

export const MAINTENANCE_KIND = 'MAINTENANCE';
export const AUDIT_KIND = 'AUDIT';
export const auditTargetPartition = (target: string) => `AUDIT#${target}`;
export const auditActorPartition = (actor: string) => `ACTOR#${actor}`;

/**
 * The allocatable index's partitions. A type's shared pool has one per rack (`ALLOC#<type>#<rack>`): a registration
 * or a fleet-wide recovery writes a rack's machines together, and one key per type took them all. Readers go through
 * the catalog's racks of the type, several at once. An org's reserved machines (`ALLOC-ORG#<org>#<type>`), which only
 * that org's creates and placements read, share one partition: they come and go at their reservation's pace (a chunk a
 * step), whatever the fleet's size, and a create reads the org's pool in one Query. Sort key `<rack>#<machine id>`.
 */
export const allocatablePartition = (machineType: string, rack: string): string => `ALLOC#${machineType}#${rack}`;
export const reservedPoolPartition = (machineType: string, org: string): string => `ALLOC-ORG#${org}#${machineType}`;
export const allocatableSortKey = (rack: string, machineId: string): string => `${rack}#${machineId}`;
export const allocatableDomainPartition = (machineType: string, reservedFor?: string): string =>
  reservedFor === undefined ? `ALLOC-NVL#${machineType}` : `ALLOC-NVL-ORG#${reservedFor}#${machineType}`;

/** Free machines with an NVLink domain are also ordered by domain, then id: a domain's free machines read alone. */
export const allocatableDomainPrefix = (domain: string): string => `${domain}#`;

type Item = Record<string, unknown>;

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

export const REPAIR_PARTITION = 'REPAIR-REQUEST';

function strip<T>(item: Item): T {
  const record = { ...item };
  for (const attribute of KEY_ATTRIBUTES) delete record[attribute];
  return record as T;
}

export function machineItem(machine: Machine, dueAt: string | undefined): Item {
  const repair = repairStage(machine);
  return {
    ...keys.machine(machine.id),
    entity: 'machine',
    kind: machineKind(machine.rack),
    kindSk: machine.id,
    ...(inAllocatableIndex(machine)
      ? {
          allocPk: machine.reservation
            ? reservedPoolPartition(machine.machineType, machine.reservation.org)
            : allocatablePartition(machine.machineType, machine.rack),
          allocSk: allocatableSortKey(machine.rack, machine.id),
        }
      : {}),
    ...(inAllocatableIndex(machine) && machine.nvlinkDomain !== undefined
      ? {
          allocNvlPk: allocatableDomainPartition(machine.machineType, machine.reservation?.org),
          allocNvlSk: `${allocatableDomainPrefix(machine.nvlinkDomain)}${machine.id}`,
        }
      : {}),
    ...dueAttributes(keys.machine(machine.id).pk, dueAt),
    ...(repair ? { repairPk: REPAIR_PARTITION, repairSince: `${repair.stage}#${repair.since}#${machine.id}` } : {}),
    ...machine,
  };
}

export function instanceItem({ usageUncounted: _counted, ...instance }: Instance, dueAt: string | undefined): Item {
  return {
    ...keys.instance(instance.id),
    entity: 'instance',
    orgPk: listingPartitionOf(instanceListing(instance.org), instance.id),
    orgSk: `${instance.createdAt}#${instance.id}`,
    ...dueAttributes(keys.instance(instance.id).pk, dueAt),
    ...(instance.replacement && instance.status === 'Provisioning' ? { replacingPk: 'REPLACING', replacingSk: `${instance.createdAt}#${instance.id}` } : {}),
    // Its org's usage counter counts it (domain/reservations/quotas.ts): what tells it from an instance 0.1.0 wrote.
    quotaCounted: true,
    ...instance,
  };
}

export function metaInstanceItem(meta: MetaInstance, dueAt: string | undefined): Item {
  const listed = meta.status !== 'Deleted';
  const waiting = meta.status === 'Placing' || meta.status === 'Retrying';
  return {
    ...keys.metaInstance(meta.id),
    entity: 'meta-instance',
    ...(listed
      ? {
          kind: listingPartitionOf(META_LISTING, meta.id),
          kindSk: `${meta.createdAt}#${meta.id}`,
          orgPk: `ORG#${meta.org}#META`,
          orgSk: `${meta.createdAt}#${meta.id}`,
        }
      : {}),
    ...dueAttributes(keys.metaInstance(meta.id).pk, dueAt),
    ...(waiting ? { waitPk: `WAIT#${meta.machineType}`, waitSk: `${meta.waitingSince ?? meta.createdAt}#${meta.id}` } : {}),
    ...meta,
  };
}

export function tenantItem(tenant: Tenant): Item {
  return { ...keys.tenant(tenant.org), entity: 'tenant', kind: 'TENANT', kindSk: tenant.org, ...tenant };
}

export function rosterBucketItem(bucket: RosterBucket, dueAt: string | undefined): Item {
  return { ...keys.rosterBucket(bucket.id), entity: 'roster-bucket', ...dueAttributes(keys.rosterBucket(bucket.id).pk, dueAt), ...bucket };
}

/**
 * Every maintenance is in byKind (kind `MAINTENANCE`), newest first, and in byOrg under its state
 * (`MAINTENANCE#<state>`): each listing of `GET /admin/maintenance` is one Query. Its own `kind` (planned or
 * emergency) is stored as `maintenanceKind`, since `kind` is byKind's key.
 */
export function maintenanceItem(maintenance: Maintenance, dueAt: string | undefined): Item {
  const { kind, ...rest } = maintenance;
  const sortKey = `${maintenance.createdAt}#${maintenance.id}`;
  return {
    ...keys.maintenance(maintenance.id),
    entity: 'maintenance',
    kind: MAINTENANCE_KIND,
    kindSk: sortKey,
    orgPk: maintenanceStatePartition(maintenance.state),
    orgSk: sortKey,
    ...dueAttributes(keys.maintenance(maintenance.id).pk, dueAt),
    ...rest,
    maintenanceKind: kind,
  };
}

export const RESERVATION_KIND = 'RESERVATION';
export const reservationsOfOrg = (org: string): string => `ORG#${org}#RESERVATION`;

/** Every reservation is in byKind (kind `RESERVATION`) and in byOrg under its org, newest first: each listing is one Query. */
export function reservationItem(reservation: Reservation, dueAt: string | undefined): Item {
  const sortKey = `${reservation.createdAt}#${reservation.id}`;
  return {
    ...keys.reservation(reservation.id),
    entity: 'reservation',
    kind: RESERVATION_KIND,
    kindSk: sortKey,
    orgPk: reservationsOfOrg(reservation.org),
    orgSk: sortKey,
    ...dueAttributes(keys.reservation(reservation.id).pk, dueAt),
    ...reservation,
  };
}

export const maintenanceStatePartition = (state: string): string => `MAINTENANCE#${state}`;

export const staleCheckItem = (check: StaleCheck): Item => ({ ...keys.staleCheck(check.id), entity: 'stale-check', ...check });

export const rosterDigestsItem = (digests: RosterDigests): Item => ({ ...keys.siteRosterDigests, ...digests });

/** An entry carrying an event is also in the eventsByDay index, under its UTC day, sorted by time: the outbox's order. */
const eventDayOf = (entry: HistoryEntry, unique: string) =>
  entry.event ? { eventDayPk: eventDayPartition(utcDay(entry.at)), eventDaySk: `${entry.at}#${unique}` } : {};

/** An org's issue report (a release with an issue) is also in byOrg under the org's reports, newest first: its repair tickets. */
const reportOf = (entry: HistoryEntry, unique: string) =>
  entry.reportingOrg ? { orgPk: reportPartition(entry.reportingOrg), orgSk: `${entry.at}#${entry.machineId}#${unique}` } : {};

export const reportPartition = (org: string): string => `ORG#${org}#REPORT`;

export function historyItem(entry: HistoryEntry, unique: string): Item {
  return { ...keys.history(entry.machineId, entry.at, unique), entity: 'history', ...eventDayOf(entry, unique), ...reportOf(entry, unique), ...entry };
}

export const eventDayPartition = (day: string): string => `EVENTS#${day}`;

/**
 * An audit entry is in three places, each read by one Query and sorted by time: its target's partition of the
 * table (pk `AUDIT#<target>`), the byKind index (kind `AUDIT`: every entry) and the auditByActor index. Keys end
 * in a unique suffix so entries of the same instant never overwrite each other.
 */
export function auditItem(entry: AuditEntry, unique: string): Item {
  const key = keys.audit(entry.target, entry.at, unique);
  return { ...key, entity: 'audit', kind: AUDIT_KIND, kindSk: key.sk, actorPk: auditActorPartition(entry.actor), actorSk: key.sk, ...entry };
}
export const siteHistoryItem = ({ key, entry }: SiteHistoryEntry): Item => ({
  ...keys.siteHistory(key),
  entity: 'history',
  ...eventDayOf(entry, key),
  ...entry,
});
export function rackAggregateItem(rack: RackAggregate): Item {
  return { ...keys.summaryRack(rack.machineType, rack.rack), entity: 'summary-rack', ...rack };
}

export function summaryShardItem(shard: SummaryShard): Item {
  return { ...keys.summaryShard(shard.machineType, shard.shard), entity: 'summary-shard', ...shard };
}

/** A history item carrying an event (the outbox), named by its key, which never changes: the event's id derives from it. */
export function outboxEntryOf(item: Item): OutboxEntry | null {
  if (!item.event) return null;
  return { key: `${String(item.pk)}/${String(item.sk)}`, entry: fromHistoryItem(item) as OutboxEntry['entry'] };
}

/** An outbox entry read from the eventsByDay index, with its position there. */
export function positionedOutboxEntryOf(item: Item): PositionedOutboxEntry | null {
  const outbox = outboxEntryOf(item);
  return outbox ? { position: String(item.eventDaySk), outbox } : null;
}

/** One per event id: its delivery was recorded (see FleetStore.recordEventDelivery). */
export function eventDeliveryItem(eventId: string, delivered: HistoryEntry): Item {
  return {
    ...keys.eventDelivery(eventId),
    entity: 'event-delivery',
    eventId,
    type: delivered.message,
    machineId: delivered.machineId,
    deliveredAt: delivered.at,
  };
}

export const fromMachineItem = (item: Item): Machine => strip<Machine>(item);
export function fromInstanceItem(item: Item): Instance {
  // A member's legacy `memberOf` stays on it until the contract migration: release 0.1.0, running beside this one
  // for the length of a deploy, still finds members by it.
  const { quotaCounted, ...instance } = strip<Instance & { quotaCounted?: true }>(item);
  return quotaCounted === true ? instance : { ...instance, usageUncounted: true };
}
/**
 * A meta-instance as stored; one that release 0.1.0 wrote has no `memberIds` yet (its members carry `memberOf`),
 * which the store fills from the legacy members index before anyone sees it (item-store.ts `withMembers`).
 */
export const fromMetaInstanceItem = (item: Item): MetaInstance => strip<MetaInstance>(item);
export const fromTenantItem = (item: Item): Tenant => strip<Tenant>(item);
export const fromRosterBucketItem = (item: Item): RosterBucket => strip<RosterBucket>(item);
export function fromMaintenanceItem(item: Item): Maintenance {
  const { maintenanceKind, ...rest } = strip<Omit<Maintenance, 'kind'> & { maintenanceKind: Maintenance['kind'] }>(item);
  return { ...rest, kind: maintenanceKind };
}
export const fromReservationItem = (item: Item): Reservation => strip<Reservation>(item);
export const fromStaleCheckItem = (item: Item): StaleCheck => strip<StaleCheck>(item);
export const fromHistoryItem = (item: Item): HistoryEntry => strip<HistoryEntry>(item);
export const fromAuditItem = (item: Item): AuditEntry => strip<AuditEntry>(item);
export const fromRackAggregateItem = (item: Item): RackAggregate => strip<RackAggregate>(item);
export const fromSummaryShardItem = (item: Item): SummaryShard => strip<SummaryShard>(item);

/** The records the due index holds, by the prefix of their partition key (`keys`). */
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
