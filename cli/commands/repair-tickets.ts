import { Command } from 'commander';
import { renderTable } from '../output.ts';
import { action, parsePositiveInt, type RuntimeDeps } from '../runtime.ts';
import { repairTicketColumns, type RepairTicket } from '../ticket-views.ts';
import { orgOption, type OrgOption } from './org-resource.ts';

// `fleetward repair-tickets`: the org's reported issues and what became of them (`/v2/org/{org}/nico/repair-tickets`).

/** The API's largest page of tickets. */
const TICKET_PAGE = 50;

export function repairTicketsCommand(deps: RuntimeDeps): Command {
  return new Command('repair-tickets')
    .description("the org's reported issues as repair tickets, newest first: open, in repair, resolved (and how) or unresolved")
    .option('--limit <n>', 'at most this many (default: all)', parsePositiveInt)
    .addOption(orgOption())
    .action(
      action(deps, async (rt, _args, o: OrgOption & { limit?: number }) => {
        // Each ticket costs the API a read of its machine's history: its pages are at most 50, read one after another.
        const max = o.limit ?? Number.POSITIVE_INFINITY;
        const items: RepairTicket[] = [];
        let nextToken: string | undefined;
        do {
          const query = { limit: Math.min(TICKET_PAGE, max - items.length), ...(nextToken ? { nextToken } : {}) };
          const page = await rt.client.get('/v2/org/{org}/nico/repair-tickets', { params: { path: { org: rt.org(o.org) }, query } });
          items.push(...page.items);
          nextToken = page.nextToken;
        } while (nextToken && items.length < max);
        rt.out.result({ items }, () => (items.length === 0 ? 'no repair tickets' : renderTable(items, repairTicketColumns)));
      }),
    );
}
