import type { RepairTicket } from '#domain/repair/repair-tickets.ts';
import { TICKET_HISTORY_READ, ticketOf } from '#domain/repair/repair-tickets.ts';
import type { AppContext } from '#runtime/context.ts';
import type { Page } from '#store/paging.ts';
import type { PageRequest } from '#store/port.ts';

/**
 * A page of the org's repair tickets, newest first: one Query of its reports (byOrg), then one bounded Query of each
 * report's machine history, in parallel. A page of `limit` tickets costs `limit` + 1 Queries, whatever the fleet.
 */
export async function listRepairTickets(ctx: AppContext, org: string, page: PageRequest): Promise<Page<RepairTicket>> {
  const reports = await ctx.store.listReports(org, page);
  const items = await Promise.all(
    reports.items.map(async (report) => ticketOf(report, await ctx.store.historySince(report.machineId, report.at, TICKET_HISTORY_READ))),
  );
  return { items, nextToken: reports.nextToken };
}
