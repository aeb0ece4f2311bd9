import type { Answer, Item } from '#client/api.ts';
import type { Column } from './output.ts';

// How an org's capacity looks to people: one row per machine type, counts as machines (GPUs).

export type Capacity = Answer<'/v2/org/{org}/nico/capacity', 'get'>;
export type Node = Item<'/v2/org/{org}/nico/nodes'>;
export type CapacityEvent = Answer<'/v2/org/{org}/nico/capacity-events', 'get'>['items'][number];
type CapacityRow = Capacity['byType'][string] & { machineType: string };
type Count = { machines: number; gpus: number };

export const capacityRows = (capacity: Capacity): CapacityRow[] =>
  Object.entries(capacity.byType)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([machineType, counts]) => ({ machineType, ...counts }));

const count = ({ machines, gpus }: Count): string => `${machines} (${gpus} GPUs)`;

export const capacityColumns: Column<CapacityRow>[] = [
  { header: 'type', value: (r) => r.machineType },
  { header: 'delivered', value: (r) => count(r.delivered) },
  { header: 'healthy', value: (r) => count(r.healthy) },
  { header: 'reserved', value: (r) => count(r.reserved) },
  { header: 'in use', value: (r) => count(r.inUse) },
];

export const nodeColumns: Column<Node>[] = [
  { header: 'node', value: (n) => n.nodeId },
  { header: 'type', value: (n) => n.machineType },
  { header: 'gpus', value: (n) => n.gpuCount },
  { header: 'health', value: (n) => n.health },
  { header: 'detail', value: (n) => n.healthDetail },
  { header: 'in use', value: (n) => n.inUse },
  { header: 'instance', value: (n) => n.instanceId },
  { header: 'project', value: (n) => n.project },
  { header: 'reservation', value: (n) => n.reservationId },
  { header: 'region', value: (n) => n.region },
];

export const capacityEventColumns: Column<CapacityEvent>[] = [
  { header: 'at', value: (e) => e.at },
  { header: 'change', value: (e) => e.change },
  { header: 'reason', value: (e) => e.reason },
  { header: 'node', value: (e) => e.machineId },
  { header: 'type', value: (e) => e.machineType },
  { header: 'id', value: (e) => e.id },
];
