import { setTimeout as sleep } from 'node:timers/promises';
import { Command } from 'commander';
import { renderRow, renderTable } from '../output.ts';
import { action, parsePositiveInt, parseSeconds, type Runtime, type RuntimeDeps } from '../runtime.ts';
import { capacityColumns, capacityEventColumns, capacityRows, nodeColumns, type CapacityEvent } from '../capacity-views.ts';
import { orgOption, type OrgOption } from './org-resource.ts';

// `fleetward capacity ...`: the org's governance view (`/v2/org/{org}/nico/capacity`, `.../nodes`, `.../capacity-events`).

export function capacityCommand(deps: RuntimeDeps): Command {
  const capacity = new Command('capacity').description("the org's capacity: delivered, healthy, reserved and in-use machines and GPUs");

  capacity
    .command('show')
    .description('counts per machine type, in machines and GPUs')
    .addOption(orgOption())
    .action(
      action(deps, async (rt, _args, o: OrgOption) => {
        const shown = await rt.client.get('/v2/org/{org}/nico/capacity', { params: { path: { org: rt.org(o.org) } } });
        const rows = capacityRows(shown);
        rt.out.result(shown, () => (rows.length === 0 ? `no capacity delivered (as of ${shown.asOf})` : renderTable(rows, capacityColumns)));
      }),
    );

  capacity
    .command('nodes')
    .description('one record per delivered machine: health, instance, project, reservation')
    .option('--limit <n>', 'at most this many (default: all)', parsePositiveInt)
    .addOption(orgOption())
    .action(
      action(deps, async (rt, _args, o: OrgOption & { limit?: number }) => {
        const items = await rt.client.list('/v2/org/{org}/nico/nodes', { params: { path: { org: rt.org(o.org) } } }, o.limit);
        rt.out.result({ items }, () => (items.length === 0 ? 'no nodes delivered' : renderTable(items, nodeColumns)));
      }),
    );

  capacity
    .command('events')
    .description('capacity delivered to and withdrawn from the org, with the reason, oldest first')
    .option('--since <cursor>', 'the cursor a previous run printed last (default: from the first entry)')
    .option('--follow', 'keep polling and print new entries as they come, until Ctrl-C')
    .option('--interval <seconds>', 'how often --follow polls', parseSeconds, 2)
    .addOption(orgOption())
    .action(
      action(deps, async (rt, _args, o: OrgOption & { since?: string; follow?: boolean; interval: number }) => {
        const org = rt.org(o.org);
        const print = (items: CapacityEvent[]) => {
          for (const item of items) rt.out.record(item, () => renderRow(item, capacityEventColumns));
        };
        // Ctrl-C ends a follow as asked for: exit 0, nothing half-printed, and the cursor to go on from on stderr.
        const stop = new AbortController();
        const onInterrupt = () => stop.abort();
        if (o.follow) process.once('SIGINT', onInterrupt);
        let cursor = o.since ?? '0';
        try {
          for (;;) {
            const page = await eventsAfter(rt, org, cursor);
            print(page.items);
            cursor = page.cursor;
            if (page.items.length > 0) continue;
            if (!o.follow) break;
            await sleep(o.interval * 1000, undefined, { signal: stop.signal }).catch(() => undefined);
            if (stop.signal.aborted) break;
          }
        } finally {
          process.off('SIGINT', onInterrupt);
        }
        rt.out.note(`cursor: ${cursor}`);
      }),
    );

  return capacity;
}

const eventsAfter = (rt: Runtime, org: string, since: string) =>
  rt.client.get('/v2/org/{org}/nico/capacity-events', { params: { path: { org }, query: { since, limit: 500 } } });
