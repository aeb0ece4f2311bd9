import type { Item } from '#client/api.ts';
import { age, type Column } from './output.ts';

// The org's repair tickets as people read them (docs/api.md "Repair tickets").

export type RepairTicket = Item<'/v2/org/{org}/nico/repair-tickets'>;

export const repairTicketColumns: Column<RepairTicket>[] = [
  { header: 'machine', value: (t) => t.machineId },
  { header: 'instance', value: (t) => t.instanceId },
  { header: 'issue', value: (t) => `${t.category}: ${t.summary}` },
  { header: 'state', value: (t) => (t.action ? `${t.state} (${t.action})` : t.state) },
  { header: 'opened', value: (t) => t.openedAt },
  { header: 'updated', value: (t) => age(t.updatedAt) },
  { header: 'closed', value: (t) => t.closedAt },
];
