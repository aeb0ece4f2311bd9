import { setTimeout as sleep } from 'node:timers/promises';
import { Command, Option } from 'commander';
import type { Body, Query } from '#client/api.ts';
import { CliError } from '../errors.ts';
import { advance, entriesSince } from '../history.ts';
import { renderRow, renderTable } from '../output.ts';
import { action, collectLabel, parseBoolean, parseCount, parsePositiveInt, parseSeconds, type Runtime, type RuntimeDeps } from '../runtime.ts';
import {
  historyColumns,
  machineColumns,
  rackColumns,
  renderLabels,
  renderMachine,
  renderOverrides,
  renderSummary,
  validationLine,
  type HistoryEntry,
  type Machine,
} from '../views.ts';
import { waitFor } from '../wait.ts';

// `fleetward machine ...`: the operator's view of a machine (carbide-admin-cli's `machine show`,
// `machine health-override show|add|remove`) and labels. With a tenant token, or with --org, the same commands
// use the tenant routes (a repair tenant watching a machine and setting repair_status).

interface OrgOption {
  org?: string;
}

/** Whether this caller uses the org's machine routes: without provider-admin, or when --org names one. */
const asTenant = (rt: Runtime, options: OrgOption): boolean => options.org !== undefined || !rt.isProviderAdmin();
const tenantMachine = (rt: Runtime, options: OrgOption, machineId: string) => ({ path: { org: rt.org(options.org), machineId } });

const orgOption = () => new Option('--org <org>', 'use the tenant routes of this org (default for tokens without provider-admin)');

const getMachine = (rt: Runtime, options: OrgOption, id: string) =>
  asTenant(rt, options)
    ? rt.client.get('/v2/org/{org}/nico/machine/{machineId}', { params: tenantMachine(rt, options, id) })
    : rt.client.get('/admin/machines/{id}', { params: { path: { id } } });

const patchLabels = (rt: Runtime, options: OrgOption, id: string, labels: Record<string, string | null>) =>
  asTenant(rt, options)
    ? rt.client.patch('/v2/org/{org}/nico/machine/{machineId}', { params: tenantMachine(rt, options, id), body: { labels } })
    : rt.client.patch('/admin/machines/{id}/labels', { params: { path: { id } }, body: { labels } });

type MachineFilters = { state?: NonNullable<Query<'/admin/machines', 'get'>['state']>; machineType?: string; healthOverride?: string; allocatable?: boolean };

/** The fleet for provider admins (every filter); the org's view otherwise, which filters by override only. */
function listMachines(rt: Runtime, o: OrgOption & MachineFilters, max: number | undefined) {
  const { state, machineType, healthOverride, allocatable } = o;
  if (!asTenant(rt, o)) {
    const query = { state, machineType, healthOverride, allocatable: allocatable === undefined ? undefined : (String(allocatable) as 'true' | 'false') };
    return rt.client.list('/admin/machines', { params: { query } }, max);
  }
  if (state !== undefined || machineType !== undefined || allocatable !== undefined) {
    throw new CliError("--state, --machine-type and --allocatable filter the provider's machine list; a tenant's list takes --health-override only", 2);
  }
  return rt.client.list('/v2/org/{org}/nico/machine', { params: { path: { org: rt.org(o.org) }, query: { healthOverride } } }, max);
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
      action(deps, async (rt, _args, o: OrgOption & MachineFilters & { limit?: number }) => {
        const items: Machine[] = await listMachines(rt, o, o.limit);
        rt.out.result({ items }, () => (items.length === 0 ? 'no machines' : renderTable(items, machineColumns)));
      }),
    );

  machine
    .command('summary')
    .description('fleet counts by state, health override and type (provider-admin), from aggregates the stream keeps')
    .option('--nvlink-domains', 'count each type per NVLink domain too')
    .action(
      action(deps, async (rt, _args, o: { nvlinkDomains?: boolean }) => {
        const summary = await rt.client.get('/admin/fleet/summary', { params: { query: o.nvlinkDomains ? { include: 'nvlinkDomains' } : {} } });
        rt.out.result(summary, () => renderSummary(summary));
      }),
    );

  machine
    .command('racks')
    .description("one type's racks with their counts, NVLink domains and reservations (provider-admin; default: the first type by name)")
    .option('--machine-type <type>', 'the racks of this type')
    .option('--limit <n>', 'at most this many (default: all)', parsePositiveInt)
    .action(
      action(deps, async (rt, _args, o: { machineType?: string; limit?: number }) => {
        const items = await rt.client.list('/admin/fleet/racks', { params: { query: { machineType: o.machineType } } }, o.limit);
        rt.out.result({ items }, () => (items.length === 0 ? 'no racks' : renderTable(items, rackColumns)));
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
        const items = await rt.client.list('/admin/machines/{id}/history', { params: { path: { id } } }, o.limit);
        rt.out.result({ items }, () => renderTable(items, historyColumns));
      }),
    );

  machine
    .command('watch')
    .description("follow the machine's history live: new entries oldest first, until Ctrl-C (provider)")
    .argument('<machine-id>')
    .option('--interval <seconds>', 'how often to poll', parseSeconds, 2)
    .option('--tail <n>', 'start with this many of the latest entries (0: only what comes next)', parseCount, 10)
    .action(
      action(deps, async (rt, [id], o: { interval: number; tail: number }) => {
        const print = (entries: HistoryEntry[]) => {
          for (const entry of entries) rt.out.record(entry, () => renderRow(entry, historyColumns));
        };
        // Ctrl-C ends the watch as asked for: exit 0, nothing half-printed.
        const stop = new AbortController();
        const onInterrupt = () => stop.abort();
        process.once('SIGINT', onInterrupt);
        try {
          const latest = await rt.client.get('/admin/machines/{id}/history', { params: { path: { id }, query: { limit: Math.max(o.tail, 10) } } });
          print(latest.items.slice(0, o.tail).reverse());
          let cursor = advance(undefined, latest.items);
          while (!stop.signal.aborted) {
            await sleep(o.interval * 1000, undefined, { signal: stop.signal }).catch(() => undefined);
            if (stop.signal.aborted) break;
            const fresh = await entriesSince(rt.client, id, cursor);
            print(fresh);
            cursor = advance(cursor, fresh);
          }
        } finally {
          process.off('SIGINT', onInterrupt);
        }
      }),
    );

  machine
    .command('validate')
    .description('ask the site agent to validate the machine (provider-admin); it leaves allocation until the validation passes')
    .argument('<machine-id>')
    .option('--wait', 'wait until the validation has finished, showing progress on stderr')
    .option('--timeout <seconds>', 'how long --wait waits', parseSeconds, 600)
    .action(
      action(deps, async (rt, [id], o: { wait?: boolean; timeout: number }) => {
        let validation = await rt.client.post('/admin/machines/{id}/validation', { params: { path: { id } } });
        if (o.wait && validation.state === 'running') {
          const requested = validation.id;
          const m = await waitFor({
            label: `validation ${requested} of ${id}`,
            poll: () => rt.client.get('/admin/machines/{id}', { params: { path: { id } } }),
            check: (x) => (x.validation?.id !== requested || x.validation.state !== 'running' ? 'done' : 'waiting'),
            describe: (x) => (x.validation ? validationLine(x.validation) : 'no validation'),
            timeoutMs: o.timeout * 1000,
          });
          validation = m.validation ?? validation;
        }
        rt.out.result(validation, () => validationLine(validation));
      }),
    );

  machine
    .command('retire')
    .description('take the machine out for good (provider-admin): never allocated again, its history kept')
    .argument('<machine-id>')
    .requiredOption('--reason <text>', 'why, for the history and the MachineRetired event')
    .action(
      action(deps, async (rt, [id], o: { reason: string }) => {
        const m = await rt.client.post('/admin/machines/{id}/retire', { params: { path: { id } }, body: { reason: o.reason } });
        rt.out.result(m, () => renderMachine(m));
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
        const items = asTenant(rt, o)
          ? (await getMachine(rt, o, id)).healthOverrides
          : (await rt.client.get('/admin/machines/{id}/health-overrides', { params: { path: { id } } })).items;
        rt.out.result({ items }, () => renderOverrides(items));
      }),
    );

  overrides
    .command('add')
    .description('add an override from a template (provider)')
    .argument('<machine-id>')
    .requiredOption(
      '--template <name>',
      'tenant-reported-issue, request-repair, request-online-repair, out-for-repair, degraded, ' +
        'internal-maintenance, mark-healthy (or PascalCase: RequestRepair, OutForRepair, ...)',
    )
    .option('--message <text>', 'why (shown in the alert)')
    .addOption(new Option('--mode <mode>', "override the template's mode").choices(['merge', 'replace']))
    .action(
      action(deps, async (rt, [id], o: { template: string; message?: string; mode?: Body<'/admin/machines/{id}/health-overrides', 'post'>['mode'] }) => {
        const created = await rt.client.post('/admin/machines/{id}/health-overrides', {
          params: { path: { id } },
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
        await rt.client.delete('/admin/machines/{id}/health-overrides/{source}', { params: { path: { id, source } } });
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
