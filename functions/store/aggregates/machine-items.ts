import { inAllocatableIndex } from '#domain/core/health.ts';
import type { Machine } from '#domain/core/model.ts';
import { repairStage } from '#domain/repair/stuck-repairs.ts';
import { dueAttributes } from '#store/aggregates/due.ts';
import type { Item } from '#store/item-access.ts';
import { strip } from '#store/item-codec.ts';

// A machine's item: in byKind under its rack, in the allocatable indexes while free, in the due index while
// something about it is due, in repairRequested while it has a repair request. Index attributes are derived from the
// record on every write, so the item is in a sparse index exactly while its state says it belongs there.

export const machineKey = (id: string) => ({ pk: `MACHINE#${id}`, sk: '#MACHINE' });

/** The machine id of a machine's partition key (`machineKey`). */
export const machineIdOfKey = (pk: string): string => pk.slice('MACHINE#'.length);

/**
 * Machines are in byKind under their rack: a registration writes a rack's machines together, and one kind for the
 * whole fleet would take every one of those writes on one key. A listing reads the catalog's racks one after another.
 */
export const machineKind = (rack: string): string => `MACHINE#${rack}`;

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

export const REPAIR_PARTITION = 'REPAIR-REQUEST';

export function machineItem(machine: Machine, dueAt: string | undefined): Item {
  const repair = repairStage(machine);
  return {
    ...machineKey(machine.id),
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
    ...dueAttributes(machineKey(machine.id).pk, dueAt),
    ...(repair ? { repairPk: REPAIR_PARTITION, repairSince: `${repair.stage}#${repair.since}#${machine.id}` } : {}),
    ...machine,
  };
}

export const fromMachineItem = (item: Item): Machine => strip<Machine>(item);
