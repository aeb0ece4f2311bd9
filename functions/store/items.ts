import { inAllocatableIndex } from '#domain/health.ts';
import { repairStage } from '#domain/stuck-repairs.ts';
import type { DueEntry } from './port.ts';
import type { AuditEntry } from '#domain/audit.ts';
import type { OutboxEntry } from '#domain/events.ts';
import type { QuotaUsage } from '#domain/quotas.ts';
import { SITE_SUBJECT, type SiteHistoryEntry } from '#domain/site-agent-silence.ts';
import type { RosterBucket, RosterDigests, StaleCheck } from '#domain/heartbeat.ts';
import type { HistoryEntry, Instance, Machine, MetaInstance, Tenant } from '#domain/model.ts';
import { utcDay } from '#domain/repair-stats.ts';
import { shardOf, type RackAggregate, type SummaryShard } from '#domain/fleet-summary.ts';

// Keys and item shapes of the single table. Index attributes are derived from the record on every write, so an
// item is in a sparse index exactly while its state says it belongs there; `dueAt` is given by the store's owner,
// from the reconcilers' due rules (DueTimes in port.ts; functions/reconcilers/registry.ts).

export const keys = {
  machine: (id: string) => ({ pk: `MACHINE#${id}`, sk: '#MACHINE' }),
  instance: (id: string) => ({ pk: `INSTANCE#${id}`, sk: '#INSTANCE' }),
  metaInstance: (id: string) => ({ pk: `META#${id}`, sk: '#META' }),
  tenant: (org: string) => ({ pk: `TENANT#${org}`, sk: '#TENANT' }),
  /** An org's usage counters and quotas, one item per machine type, all in the org's partition: one Query reads them. */
  quotaUsage: (org: string, machineType: string) => ({ pk: quotaPartition(org), sk: `TYPE#${machineType}` }),
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
  siteHeartbeat: { pk: 'SITE', sk: 'HEARTBEAT' },
  siteRosterDigests: { pk: 'SITE', sk: 'ROSTER' },
  siteCatalog: { pk: 'SITE', sk: 'CATALOG' },
  siteSafety: { pk: 'SITE', sk: 'SAFETY' },
  /** One type's racks, grouped by counter shard so the sweep can recount one shard; the rack map pages through them. */
  summaryRack: (machineType: string, rack: string) => ({ pk: `SUMMARY-RACKS#${machineType}`, sk: `${shardKey(shardOf(rack))}#${rack}` }),
  summaryRackShardPrefix: (shard: number) => `${shardKey(shard)}#`,
  /** Every type's counter shards in one partition: the summary is one bounded Query. */
  summaryShard: (machineType: string, shard: number) => ({ pk: SUMMARY_PARTITION, sk: `${machineType}#${shardKey(shard)}` }),
};

export const SUMMARY_PARTITION = 'SUMMARY';
export const quotaPartition = (org: string): string => `QUOTA#${org}`;

/** The machine id of a machine's partition key (`keys.machine`). */
export const machineIdOfKey = (pk: string): string => pk.slice('MACHINE#'.length);

const shardKey = (shard: number): string => String(shard).padStart(2, '0');

export const DUE_PARTITION = 'DUE';
export const AUDIT_KIND = 'AUDIT';
export const auditTargetPartition = (target: string) => `AUDIT#${target}`;
export const auditActorPartition = (actor: string) => `ACTOR#${actor}`;

/** Free machines are ordered by rack, then id: a rack's free machines come together, and one rack reads alone. */
export const allocatableSortKey = (rack: string, id: string): string => `${rack}#${id}`;
export const allocatableRackPrefix = (rack: string): string => allocatableSortKey(rack, '');
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
  'memberOf',
  'memberSk',
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
    kind: 'MACHINE',
    kindSk: machine.id,
    ...(inAllocatableIndex(machine) ? { allocPk: `ALLOC#${machine.machineType}`, allocSk: allocatableSortKey(machine.rack, machine.id) } : {}),
    ...(inAllocatableIndex(machine) && machine.nvlinkDomain !== undefined
      ? { allocNvlPk: `ALLOC-NVL#${machine.machineType}`, allocNvlSk: `${allocatableDomainPrefix(machine.nvlinkDomain)}${machine.id}` }
      : {}),
    ...(dueAt ? { duePk: DUE_PARTITION, dueAt } : {}),
    ...(repair ? { repairPk: REPAIR_PARTITION, repairSince: `${repair.stage}#${repair.since}#${machine.id}` } : {}),
    ...machine,
  };
}

export function instanceItem(instance: Instance, dueAt: string | undefined): Item {
  return {
    ...keys.instance(instance.id),
    entity: 'instance',
    orgPk: `ORG#${instance.org}#INSTANCE`,
    orgSk: `${instance.createdAt}#${instance.id}`,
    ...(dueAt ? { duePk: DUE_PARTITION, dueAt } : {}),
    // The members index holds a meta-instance's members until they are Terminated: a finished member is never
    // looked at again, and the meta-instance reconciler reads this index on every pass.
    ...(instance.metaInstanceId && instance.status !== 'Terminated' ? { memberOf: `META#${instance.metaInstanceId}`, memberSk: instance.id } : {}),
    ...(instance.replacement && instance.status === 'Provisioning' ? { replacingPk: 'REPLACING', replacingSk: `${instance.createdAt}#${instance.id}` } : {}),
    ...instance,
  };
}

export function metaInstanceItem(meta: MetaInstance, dueAt: string | undefined): Item {
  const listed = meta.status !== 'Deleted';
  const waiting = meta.status === 'Placing' || meta.status === 'Retrying';
  return {
    ...keys.metaInstance(meta.id),
    entity: 'meta-instance',
    ...(listed ? { kind: 'META', kindSk: `${meta.createdAt}#${meta.id}`, orgPk: `ORG#${meta.org}#META`, orgSk: `${meta.createdAt}#${meta.id}` } : {}),
    ...(dueAt ? { duePk: DUE_PARTITION, dueAt } : {}),
    ...(waiting ? { waitPk: `WAIT#${meta.machineType}`, waitSk: `${meta.waitingSince ?? meta.createdAt}#${meta.id}` } : {}),
    ...meta,
  };
}

export function tenantItem(tenant: Tenant): Item {
  return { ...keys.tenant(tenant.org), entity: 'tenant', kind: 'TENANT', kindSk: tenant.org, ...tenant };
}

export function rosterBucketItem(bucket: RosterBucket, dueAt: string | undefined): Item {
  return { ...keys.rosterBucket(bucket.id), entity: 'roster-bucket', ...(dueAt ? { duePk: DUE_PARTITION, dueAt } : {}), ...bucket };
}

export const staleCheckItem = (check: StaleCheck): Item => ({ ...keys.staleCheck(check.id), entity: 'stale-check', ...check });

export const rosterDigestsItem = (digests: RosterDigests): Item => ({ ...keys.siteRosterDigests, ...digests });

/** An entry carrying an event is also in the eventsByDay index, under its UTC day. */
export function historyItem(entry: HistoryEntry, unique: string): Item {
  const eventDay = entry.event ? { eventDayPk: eventDayPartition(utcDay(entry.at)), eventDaySk: `${entry.at}#${unique}` } : {};
  return { ...keys.history(entry.machineId, entry.at, unique), entity: 'history', ...eventDay, ...entry };
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
export const siteHistoryItem = ({ key, entry }: SiteHistoryEntry): Item => ({ ...keys.siteHistory(key), entity: 'history', ...entry });
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
export const fromInstanceItem = (item: Item): Instance => strip<Instance>(item);
export const fromMetaInstanceItem = (item: Item): MetaInstance => strip<MetaInstance>(item);
export const fromTenantItem = (item: Item): Tenant => strip<Tenant>(item);
export const fromRosterBucketItem = (item: Item): RosterBucket => strip<RosterBucket>(item);
export const fromStaleCheckItem = (item: Item): StaleCheck => strip<StaleCheck>(item);
export const fromHistoryItem = (item: Item): HistoryEntry => strip<HistoryEntry>(item);
export const fromAuditItem = (item: Item): AuditEntry => strip<AuditEntry>(item);
export const fromQuotaUsageItem = (item: Item): QuotaUsage => ({
  org: String(item.org),
  machineType: String(item.machineType),
  used: Number(item.used ?? 0),
  ...(typeof item.quota === 'number' ? { quota: item.quota } : {}),
});
export const fromRackAggregateItem = (item: Item): RackAggregate => strip<RackAggregate>(item);
export const fromSummaryShardItem = (item: Item): SummaryShard => strip<SummaryShard>(item);

/** What a due-index entry points at: the record's own entity (the sweep delivers it to its watchers again). */
export const dueEntryOf = (item: Item): DueEntry => ({ entity: String(item.entity), id: String(item.id) });
