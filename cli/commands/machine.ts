import { Command, Option } from 'commander';
import { path } from '../http.ts';
import { renderTable } from '../output.ts';
import { action, collectLabel, parseBoolean, parsePositiveInt, parseSeconds, type Runtime, type RuntimeDeps } from '../runtime.ts';
import { machineColumns, renderLabels, renderMachine, renderOverrides, type HealthOverride, type Machine } from '../views.ts';
import { waitFor } from '../wait.ts';

// `fleetward machine ...`: the operator's view of a machine (carbide-admin-cli's `machine show`,
// `machine health-override show|add|remove`) and labels. With a tenant token, or with --org, the same commands
// use the tenant routes (a repair tenant watching a machine and setting repair_status).

interface OrgOption {
  org?: string;
}

/** The machine routes this caller should use: /admin for provider admins, the org's routes otherwise. */
function machineBase(rt: Runtime, options: OrgOption): { tenant: boolean; base: string } {
  if (options.org === undefined && rt.isProviderAdmin()) return { tenant: false, base: '/admin/machines' };
  return { tenant: true, base: path`/v2/org/${rt.org(options.org)}/nico/machine` };
}

const orgOption = () => new Option('--org <org>', "use the tenant routes of this org (default for tokens without provider-admin)");

const getMachine = (rt: Runtime, options: OrgOption, id: string) => rt.client.request<Machine>('GET', `${machineBase(rt, options).base}${path`/${id}`}`);

async function patchLabels(rt: Runtime, options: OrgOption, id: string, labels: Record<string, string | null>): Promise<Machine> {
  const { tenant, base } = machineBase(rt, options);
  return rt.client.request<Machine>('PATCH', tenant ? `${base}${path`/${id}`}` : path`/admin/machines/${id}/labels`, { body: { labels } });
}

export function machineCommand(deps: RuntimeDeps): Command {
  const machine = new Command('machine').description('machines of the site: list, show, health overrides, labels');

  machine
    .command('list')
    .description('list machines (provider: whole fleet with filters; tenant: needs targetedInstanceCreation)')
    .addOption(new Option('--state <state>', 'only machines in this state').choices(['Ready', 'Assigned', 'Cleanup']))
    .option('--machine-type <type>', 'only machines of this type')
    .option('--health-override <source>', 'only machines with this override, e.g. repair-request')
    .option('--allocatable <bool>', 'only (non-)allocatable machines', parseBoolean)
    .option('--limit <n>', 'at most this many (default: all)', parsePositiveInt)
    .addOption(orgOption())
    .action(
      action(deps, async (rt, _args, o: OrgOption & { state?: string; machineType?: string; healthOverride?: string; allocatable?: boolean; limit?: number }) => {
        const items = await rt.client.list<Machine>(
          machineBase(rt, o).base,
          { state: o.state, machineType: o.machineType, healthOverride: o.healthOverride, allocatable: o.allocatable },
          o.limit,
        );
        rt.out.result({ items }, () => (items.length === 0 ? 'no machines' : renderTable(items, machineColumns)));
      }),
    );

  machine
    .command('show')
    .description('one machine: state, allocatability, health overrides, labels')
    .argument('<machine-id>')
    .option('--wait-allocatable', 'wait until the machine is back in the pool (allocatable), showing progress on stderr')
    .option('--timeout <seconds>', 'how long --wait-allocatable waits', parseSeconds, 600)
    .addOption(orgOption())
    .action(
      action(deps, async (rt, [id], o: OrgOption & { waitAllocatable?: boolean; timeout: number }) => {
        let m = await getMachine(rt, o, id);
        if (o.waitAllocatable && !m.allocatable) {
          m = await waitFor({
            label: `machine ${id}`,
            poll: () => getMachine(rt, o, id),
            check: (x) => (x.allocatable ? 'done' : 'waiting'),
            describe: (x) => (x.allocatable ? `${x.state}, allocatable` : `${x.state}, not allocatable (${x.notAllocatableReasons.join(', ')})`),
            timeoutMs: o.timeout * 1000,
          });
        }
        rt.out.result(m, () => renderMachine(m));
      }),
    );

  machine
    .command('history')
    .description("the machine's history, newest first (provider)")
    .argument('<machine-id>')
    .option('--limit <n>', 'at most this many entries', parsePositiveInt, 50)
    .action(
      action(deps, async (rt, [id], o: { limit: number }) => {
        const items = await rt.client.list<{ at: string; actor: string; action: string; instanceId?: string; message?: string; issue?: { category: string; summary: string } }>(
          path`/admin/machines/${id}/history`,
          {},
          o.limit,
        );
        rt.out.result({ items }, () =>
          renderTable(items, [
            { header: 'at', value: (h) => h.at },
            { header: 'actor', value: (h) => h.actor },
            { header: 'action', value: (h) => h.action },
            { header: 'instance', value: (h) => h.instanceId },
            { header: 'message', value: (h) => h.message ?? (h.issue ? `${h.issue.category}: ${h.issue.summary}` : undefined) },
          ]),
        );
      }),
    );

  machine.addCommand(healthOverrideCommand(deps));
  machine.addCommand(metadataCommand(deps));
  return machine;
}

function healthOverrideCommand(deps: RuntimeDeps): Command {
  const overrides = new Command('health-override').alias('health-report').description("a machine's health overrides");

  overrides
    .command('show')
    .description("the machine's health overrides")
    .argument('<machine-id>')
    .addOption(orgOption())
    .action(
      action(deps, async (rt, [id], o: OrgOption) => {
        const { tenant, base } = machineBase(rt, o);
        const items = tenant
          ? (await getMachine(rt, o, id)).healthOverrides
          : (await rt.client.request<{ items: HealthOverride[] }>('GET', `${base}${path`/${id}/health-overrides`}`)).items;
        rt.out.result({ items }, () => renderOverrides(items));
      }),
    );

  overrides
    .command('add')
    .description('add an override from a template (provider)')
    .argument('<machine-id>')
    .requiredOption(
      '--template <name>',
      'tenant-reported-issue, request-repair, request-online-repair, out-for-repair, degraded, internal-maintenance, mark-healthy (or PascalCase: RequestRepair, OutForRepair, ...)',
    )
    .option('--message <text>', 'why (shown in the alert)')
    .addOption(new Option('--mode <mode>', "override the template's mode").choices(['merge', 'replace']))
    .action(
      action(deps, async (rt, [id], o: { template: string; message?: string; mode?: string }) => {
        const created = await rt.client.request<HealthOverride>('POST', path`/admin/machines/${id}/health-overrides`, {
          body: { template: o.template, ...(o.message !== undefined ? { message: o.message } : {}), ...(o.mode ? { mode: o.mode } : {}) },
        });
        rt.out.result(created, () => `added health override ${created.source} to machine ${id}\n${renderOverrides([created])}`);
      }),
    );

  overrides
    .command('remove')
    .description('remove the override of one source, e.g. repair-request or tenant-reported-issue (provider)')
    .argument('<machine-id>')
    .argument('<source>')
    .action(
      action(deps, async (rt, [id, source]) => {
        await rt.client.request('DELETE', path`/admin/machines/${id}/health-overrides/${source}`);
        rt.out.result({ machineId: id, source, removed: true }, () => `removed health override ${source} from machine ${id}`);
      }),
    );

  return overrides;
}

function metadataCommand(deps: RuntimeDeps): Command {
  const metadata = new Command('metadata').description('machine labels (repair_status, repair_details, repair_eta, ...)');

  metadata
    .command('add-label')
    .description('set labels: key=value ...')
    .argument('<machine-id>')
    .argument('<labels...>', 'key=value pairs')
    .addOption(orgOption())
    .action(
      action(deps, async (rt, [id, pairs], o: OrgOption) => {
        const labels = (pairs as string[]).reduce<Record<string, string>>((acc, pair) => collectLabel(pair, acc), {});
        const m = await patchLabels(rt, o, id, labels);
        rt.out.result(m, () => `labels of machine ${id}:\n${renderLabels(m.labels)}`);
      }),
    );

  metadata
    .command('remove-labels')
    .description('remove labels by key')
    .argument('<machine-id>')
    .argument('<keys...>')
    .addOption(orgOption())
    .action(
      action(deps, async (rt, [id, keys], o: OrgOption) => {
        const m = await patchLabels(rt, o, id, Object.fromEntries((keys as string[]).map((k) => [k, null])));
        rt.out.result(m, () => `labels of machine ${id}:\n${renderLabels(m.labels)}`);
      }),
    );

  return metadata;
}
