import { Command } from 'commander';
import { renderTable } from '../output.ts';
import { action, parsePositiveInt, type RuntimeDeps } from '../runtime.ts';
import { capacityColumns, capacityRows, nodeColumns } from '../capacity-views.ts';
import { orgOption, type OrgOption } from './org-resource.ts';

// `fleetward capacity ...`: the org's governance view (`/v2/org/{org}/nico/capacity`, `.../nodes`).

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

  return capacity;
}
