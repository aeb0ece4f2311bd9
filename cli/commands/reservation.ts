import { Command, Option } from 'commander';
import type { Answer } from '#client/api.ts';
import { renderKeyValues, renderTable, type Column } from '../output.ts';
import { CliError, exitCodes } from '../errors.ts';
import { action, parsePositiveInt, type RuntimeDeps } from '../runtime.ts';

// `fleetward reservation create|list|show|release`: capacity pinned to one org (POST/GET/DELETE /admin/reservations;
// `list --org` is the org's own view, GET /v2/org/{org}/nico/reservation).

type Reservation = Answer<'/admin/reservations/{id}', 'get'>;

const healthOf = (r: Reservation): string =>
  `${r.health.machines} machines, ${r.health.healthy} healthy, ${r.health.inUse} in use, ${r.health.quarantined} quarantined`;

const columns: Column<Reservation>[] = [
  { header: 'id', value: (r) => r.id },
  { header: 'org', value: (r) => r.org },
  { header: 'name', value: (r) => r.name },
  { header: 'type', value: (r) => r.machineType },
  { header: 'state', value: (r) => r.state },
  { header: 'machines', value: (r) => r.machineIds.length },
  { header: 'healthy', value: (r) => r.health.healthy },
  { header: 'in use', value: (r) => r.health.inUse },
  { header: 'quarantined', value: (r) => r.health.quarantined },
  { header: 'created', value: (r) => r.createdAt },
];

const render = (r: Reservation): string =>
  renderKeyValues([
    ['id', r.id],
    ['org', r.org],
    ['name', r.name],
    ['type', r.machineType],
    ['state', r.state],
    ['wanted', r.wanted],
    ['free', r.free],
    ['nvlinkDomains', r.nvlinkDomains?.join(', ')],
    ['machines', r.machineIds.join(', ')],
    ['health', healthOf(r)],
    ['created', r.createdAt],
    ['released', r.releasedAt],
  ]);

const list = (value: string): string[] => value.split(',').filter((part) => part.length > 0);

export function reservationCommand(deps: RuntimeDeps): Command {
  const reservation = new Command('reservation').description('capacity reserved for one org, all or none (provider; list --org for an org)');

  reservation
    .command('create')
    .description('reserve machines for an org: a count of a type, named machines, or whole NVLink domains')
    .argument('<org>')
    .argument('<machineType>')
    .addOption(new Option('--count <n>', 'this many free machines of the type').argParser(parsePositiveInt).conflicts(['machineIds', 'nvlinkDomains']))
    .addOption(new Option('--machine-ids <ids>', 'these machines, comma-separated').argParser(list).conflicts('nvlinkDomains'))
    .option('--nvlink-domains <domains>', 'every machine of these NVLink domains, comma-separated', list)
    .option('--name <name>', 'a name to know it by')
    .action(
      action(deps, async (rt, [org, machineType], o: { count?: number; machineIds?: string[]; nvlinkDomains?: string[]; name?: string }) => {
        const ask =
          o.count !== undefined
            ? { count: o.count }
            : o.machineIds
              ? { machineIds: o.machineIds }
              : o.nvlinkDomains
                ? { nvlinkDomains: o.nvlinkDomains }
                : null;
        if (!ask) throw new CliError('give one of --count, --machine-ids or --nvlink-domains', exitCodes.usage);
        const body = { org: org as string, machineType: machineType as string, ...ask, ...(o.name ? { name: o.name } : {}) };
        const created = await rt.client.post('/admin/reservations', { body });
        rt.out.result(created, () => render(created));
      }),
    );

  reservation
    .command('list')
    .description("every org's reservations, newest first; with --org, that org's own (a tenant's view)")
    .option('--org <org>', "one org's own reservations, as its tenants see them")
    .option('--limit <n>', 'at most this many (default: all)', parsePositiveInt)
    .action(
      action(deps, async (rt, _args, o: { org?: string; limit?: number }) => {
        const items = o.org
          ? await rt.client.list('/v2/org/{org}/nico/reservation', { params: { path: { org: rt.org(o.org) } } }, o.limit)
          : await rt.client.list('/admin/reservations', {}, o.limit);
        rt.out.result({ items }, () => (items.length === 0 ? 'no reservations' : renderTable(items, columns)));
      }),
    );

  reservation
    .command('show')
    .description('one reservation: its machines, state and health')
    .argument('<id>')
    .action(
      action(deps, async (rt, [id]) => {
        const shown = await rt.client.get('/admin/reservations/{id}', { params: { path: { id: id as string } } });
        rt.out.result(shown, () => render(shown));
      }),
    );

  reservation
    .command('release')
    .description('release: its machines go back to the shared pool as they come free')
    .argument('<id>')
    .action(
      action(deps, async (rt, [id]) => {
        const released = await rt.client.delete('/admin/reservations/{id}', { params: { path: { id: id as string } } });
        rt.out.result(released, () => render(released));
      }),
    );

  return reservation;
}
