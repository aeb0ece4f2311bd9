import { inAllocatableIndex } from '#domain/health.ts';
import { isEntityKind, registry, type EntityRef } from '#reconcilers/registry.ts';
import { repairStage } from '#domain/stuck-repairs.ts';
import type { OutboxEntry } from '#domain/events.ts';
import type { HistoryEntry, Instance, Machine, MetaInstance, Tenant } from '#domain/model.ts';
import { shardOf, type RackAggregate, type SummaryShard } from '#domain/fleet-summary.ts';

// Keys and item shapes of the single table. Index attributes are derived from the record on every write, so an
// item is in a sparse index exactly while its state says it belongs there; `dueAt` comes from the reconcilers'
// due rules (functions/reconcilers/registry.ts).

export const keys = {
  machine: (id: string) => ({ pk: `MACHINE#${id}`, sk: '#MACHINE' }),
  instance: (id: string) => ({ pk: `INSTANCE#${id}`, sk: '#INSTANCE' }),
  metaInstance: (id: string) => ({ pk: `META#${id}`, sk: '#META' }),
  tenant: (org: string) => ({ pk: `TENANT#${org}`, sk: '#TENANT' }),
  history: (machineId: string, at: string, unique: string) => ({ pk: `MACHINE#${machineId}`, sk: `HISTORY#${at}#${unique}` }),
  historyPrefix: 'HISTORY#',
  eventDelivery: (eventId: string) => ({ pk: `EVENT#${eventId}`, sk: '#DELIVERED' }),
  siteHeartbeat: { pk: 'SITE', sk: 'HEARTBEAT' },
  siteCatalog: { pk: 'SITE', sk: 'CATALOG' },
  siteSafety: { pk: 'SITE', sk: 'SAFETY' },
  /** One type's racks, grouped by counter shard so the sweep can recount one shard; the rack map pages through them. */
  summaryRack: (machineType: string, rack: string) => ({ pk: `SUMMARY-RACKS#${machineType}`, sk: `${shardKey(shardOf(rack))}#${rack}` }),
  summaryRackShardPrefix: (shard: number) => `${shardKey(shard)}#`,
  /** Every type's counter shards in one partition: the summary is one bounded Query. */
  summaryShard: (machineType: string, shard: number) => ({ pk: SUMMARY_PARTITION, sk: `${machineType}#${shardKey(shard)}` }),
};

export const SUMMARY_PARTITION = 'SUMMARY';

const shardKey = (shard: number): string => String(shard).padStart(2, '0');

export const DUE_PARTITION = 'DUE';

type Item = Record<string, unknown>;

const KEY_ATTRIBUTES = ['pk', 'sk', 'kind', 'kindSk', 'allocPk', 'allocSk', 'orgPk', 'orgSk', 'duePk', 'dueAt', 'repairPk', 'repairSince', 'memberOf', 'memberSk', 'waitPk', 'waitSk', 'replacingPk', 'replacingSk', 'entity'];

export const REPAIR_PARTITION = 'REPAIR-REQUEST';

function strip<T>(item: Item): T {
  const record = { ...item };
  for (const attribute of KEY_ATTRIBUTES) delete record[attribute];
  return record as T;
}

export function machineItem(machine: Machine): Item {
  const dueAt = registry.dueAtOf('machine', machine);
  const repair = repairStage(machine);
  return {
    ...keys.machine(machine.id),
    entity: 'machine',
    kind: 'MACHINE',
    kindSk: machine.id,
    ...(inAllocatableIndex(machine) ? { allocPk: `ALLOC#${machine.machineType}`, allocSk: machine.id } : {}),
    ...(dueAt ? { duePk: DUE_PARTITION, dueAt } : {}),
    ...(repair ? { repairPk: REPAIR_PARTITION, repairSince: `${repair.stage}#${repair.since}#${machine.id}` } : {}),
    ...machine,
  };
}

export function instanceItem(instance: Instance): Item {
  const dueAt = registry.dueAtOf('instance', instance);
  return {
    ...keys.instance(instance.id),
    entity: 'instance',
    orgPk: `ORG#${instance.org}#INSTANCE`,
    orgSk: `${instance.createdAt}#${instance.id}`,
    ...(dueAt ? { duePk: DUE_PARTITION, dueAt } : {}),
    ...(instance.metaInstanceId ? { memberOf: `META#${instance.metaInstanceId}`, memberSk: instance.id } : {}),
    ...(instance.replacement && instance.status === 'Provisioning' ? { replacingPk: 'REPLACING', replacingSk: `${instance.createdAt}#${instance.id}` } : {}),
    ...instance,
  };
}

export function metaInstanceItem(meta: MetaInstance): Item {
  const dueAt = registry.dueAtOf('meta-instance', meta);
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

export function historyItem(entry: HistoryEntry, unique: string): Item {
  return { ...keys.history(entry.machineId, entry.at, unique), entity: 'history', ...entry };
}

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
  return { ...keys.eventDelivery(eventId), entity: 'event-delivery', eventId, type: delivered.message, machineId: delivered.machineId, deliveredAt: delivered.at };
}

export const fromMachineItem = (item: Item): Machine => strip<Machine>(item);
export const fromInstanceItem = (item: Item): Instance => strip<Instance>(item);
export const fromMetaInstanceItem = (item: Item): MetaInstance => strip<MetaInstance>(item);
export const fromTenantItem = (item: Item): Tenant => strip<Tenant>(item);
export const fromHistoryItem = (item: Item): HistoryEntry => strip<HistoryEntry>(item);
export const fromRackAggregateItem = (item: Item): RackAggregate => strip<RackAggregate>(item);
export const fromSummaryShardItem = (item: Item): SummaryShard => strip<SummaryShard>(item);

export type { EntityRef };

/** What a due-index entry points at: the record's own entity (the sweep delivers it to its watchers again). */
export function entityRefOf(item: Item): EntityRef | null {
  return isEntityKind(item.entity) ? { entity: item.entity, id: String(item.id) } : null;
}
