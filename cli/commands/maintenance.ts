import { Argument, Command, Option } from 'commander';
import type { Body, Query } from '#client/api.ts';
import { CliError } from '../errors.ts';
import { renderMaintenance, maintenanceColumns } from '../maintenance-views.ts';
import { renderTable } from '../output.ts';
import { action, collect, parseCount, parsePositiveInt, type Runtime, type RuntimeDeps } from '../runtime.ts';
import { orgOption, type OrgOption } from './org-resource.ts';

// `fleetward maintenance ...`: declared maintenance (API.md "Declared maintenance"). The provider declares, lists,
// shows, cancels and resumes it and decides deferrals; a tenant (a token without provider-admin, or --org) lists and
// shows what touches its instances, hands them back early and asks for a deferral.

type Declare = Body<'/admin/maintenance', 'post'>;
type State = NonNullable<Query<'/admin/maintenance', 'get'>['state']>;

/** Whether this caller uses the org's maintenance routes: without provider-admin, or when --org names one. */
const asTenant = (rt: Runtime, o: OrgOption): boolean => o.org !== undefined || !rt.isProviderAdmin();
const one = (id: string) => ({ params: { path: { id } } });
const ofOrg = (rt: Runtime, o: OrgOption, id: string) => ({ params: { path: { org: rt.org(o.org), id } } });

interface DeclareFlags {
  kind: Declare['kind'];
  category: Declare['category'];
  reason: string;
  impact?: string;
  machine?: string[];
  rack?: string[];
  nvlinkDomain?: string[];
  handBackBy?: string;
  inHours?: number;
  window: number;
  maxInFlight?: number;
  haltAfterFailures?: number;
}

/** The deadline: `--hand-back-by <time>` as given, or `--in-hours <n>` from now. */
function handBackBy(o: DeclareFlags): string {
  if ((o.handBackBy === undefined) === (o.inHours === undefined)) throw new CliError('give the deadline: --hand-back-by <time> or --in-hours <n>', 2);
  if (o.handBackBy !== undefined) return o.handBackBy;
  return new Date(Date.now() + o.inHours! * 3_600_000).toISOString();
}

function declareBody(o: DeclareFlags): Declare {
  if (!o.machine && !o.rack && !o.nvlinkDomain) throw new CliError('name the scope: --machine, --rack or --nvlink-domain (each repeatable)', 2);
  const rollout = {
    ...(o.maxInFlight !== undefined ? { maxInFlight: o.maxInFlight } : {}),
    ...(o.haltAfterFailures !== undefined ? { haltAfterFailures: o.haltAfterFailures } : {}),
  };
  return {
    kind: o.kind,
    category: o.category,
    reason: o.reason,
    ...(o.impact !== undefined ? { impact: o.impact } : {}),
    scope: {
      ...(o.machine ? { machineIds: o.machine } : {}),
      ...(o.rack ? { racks: o.rack } : {}),
      ...(o.nvlinkDomain ? { nvlinkDomains: o.nvlinkDomain } : {}),
    },
    handBackBy: handBackBy(o),
    windowMinutes: o.window,
    ...(Object.keys(rollout).length > 0 ? { rollout } : {}),
  };
}

export function maintenanceCommand(deps: RuntimeDeps): Command {
  const maintenance = new Command('maintenance').description('declared maintenance: hand-back windows, waves and validated return');

  maintenance
    .command('declare')
    .description('declare maintenance on machines, racks or NVLink domains (provider-admin); the machines are told asynchronously')
    .addOption(new Option('--kind <kind>', 'planned gives tenants days to hand back, emergency minutes').choices(['planned', 'emergency']).default('planned'))
    .addOption(new Option('--category <category>', 'what the work is').choices(['firmware', 'hardware', 'network', 'facility', 'other']).makeOptionMandatory())
    .requiredOption('--reason <text>', 'what is done and why (1..1024 characters)')
    .option('--impact <text>', 'what tenants will notice')
    .option('--machine <id>', 'a machine in scope (repeatable)', collect)
    .option('--rack <rack>', "a rack's machines in scope (repeatable)", collect)
    .option('--nvlink-domain <domain>', "an NVLink domain's machines in scope (repeatable)", collect)
    .option('--hand-back-by <time>', 'the deadline for tenants to hand back (ISO 8601)')
    .option('--in-hours <n>', 'the deadline, this many hours from now', parseCount)
    .requiredOption('--window <minutes>', 'per machine, from hand-back to validated return: the provider’s promise', parsePositiveInt)
    .option('--max-in-flight <n>', 'machines in maintenance or validating at once (default: all)', parsePositiveInt)
    .option('--halt-after-failures <n>', 'failures that halt the rollout (default 1)', parsePositiveInt)
    .action(
      action(deps, async (rt, _args, o: DeclareFlags) => {
        const declared = await rt.client.post('/admin/maintenance', { body: declareBody(o) });
        rt.out.result(declared, () => `declared maintenance ${declared.id} on ${declared.machineIds.length} machine(s)\n\n${renderMaintenance(declared)}`);
      }),
    );

  maintenance
    .command('list')
    .description('maintenance, newest first (provider: every one, --state filters; tenant: the open ones touching its instances)')
    .addOption(
      new Option('--state <state>', 'only maintenance in this state (provider)').choices(['Declared', 'InProgress', 'Halted', 'Completed', 'Cancelled']),
    )
    .option('--limit <n>', 'at most this many (default: all)', parsePositiveInt)
    .addOption(orgOption())
    .action(
      action(deps, async (rt, _args, o: OrgOption & { state?: State; limit?: number }) => {
        if (asTenant(rt, o) && o.state !== undefined) throw new CliError("--state filters the provider's list; a tenant's list shows open maintenance only", 2);
        const items = asTenant(rt, o)
          ? (await rt.client.get('/v2/org/{org}/nico/maintenance', { params: { path: { org: rt.org(o.org) } } })).items.slice(0, o.limit)
          : await rt.client.list('/admin/maintenance', { params: { query: { state: o.state } } }, o.limit);
        rt.out.result({ items }, () => (items.length === 0 ? 'no maintenance' : renderTable(items, maintenanceColumns)));
      }),
    );

  maintenance
    .command('show')
    .description("one maintenance: every machine's course, deferrals, and (provider) its history")
    .argument('<maintenance-id>')
    .addOption(orgOption())
    .action(
      action(deps, async (rt, [id], o: OrgOption) => {
        const found = asTenant(rt, o)
          ? await rt.client.get('/v2/org/{org}/nico/maintenance/{id}', ofOrg(rt, o, id))
          : await rt.client.get('/admin/maintenance/{id}', one(id));
        rt.out.result(found, () => renderMaintenance(found));
      }),
    );

  maintenance
    .command('cancel')
    .description('cancel (provider-admin): machines not yet admitted lose the override, instances the notice; admitted ones finish')
    .argument('<maintenance-id>')
    .action(
      action(deps, async (rt, [id]) => {
        const after = await rt.client.post('/admin/maintenance/{id}/cancel', one(id));
        rt.out.result(after, () => `maintenance ${id} is ${after.state}`);
      }),
    );

  maintenance
    .command('resume')
    .description('resume a halted maintenance (provider-admin): machines are admitted again')
    .argument('<maintenance-id>')
    .action(
      action(deps, async (rt, [id]) => {
        const after = await rt.client.post('/admin/maintenance/{id}/resume', one(id));
        rt.out.result(after, () => `maintenance ${id} is ${after.state}`);
      }),
    );

  maintenance
    .command('decide')
    .description("accept or reject an org's deferral (provider-admin); accepting moves that org's deadline")
    .argument('<maintenance-id>')
    .argument('<org>')
    .addArgument(new Argument('<decision>', 'accept or reject').choices(['accept', 'reject']))
    .action(
      action(deps, async (rt, [id, org, decision]) => {
        const after = await rt.client.post('/admin/maintenance/{id}/deferrals/{org}', { params: { path: { id, org } }, body: { decision } });
        const deferral = after.deferrals.find((d) => d.org === org);
        rt.out.result(after, () => `deferral of org ${org} ${deferral?.state ?? decision}: hand back by ${deferral?.until ?? after.handBackBy}`);
      }),
    );

  maintenance
    .command('hand-back')
    .description('hand instances back early (tenant): each is released, and its machine goes into maintenance after cleanup')
    .argument('<maintenance-id>')
    .requiredOption('--instance <id>', 'an instance to hand back (repeatable)', collect)
    .addOption(orgOption())
    .action(
      action(deps, async (rt, [id], o: OrgOption & { instance: string[] }) => {
        const answer = await rt.client.post('/v2/org/{org}/nico/maintenance/{id}/hand-back', { ...ofOrg(rt, o, id), body: { instanceIds: o.instance } });
        rt.out.result(answer, () => `handed back ${answer.handedBack.join(', ')}`);
      }),
    );

  maintenance
    .command('defer')
    .description('ask for more time to hand back (tenant); the provider decides')
    .argument('<maintenance-id>')
    .requiredOption('--until <time>', 'the deadline asked for (ISO 8601)')
    .requiredOption('--reason <text>', 'why the org needs it')
    .addOption(orgOption())
    .action(
      action(deps, async (rt, [id], o: OrgOption & { until: string; reason: string }) => {
        const after = await rt.client.post('/v2/org/{org}/nico/maintenance/{id}/deferral', { ...ofOrg(rt, o, id), body: { until: o.until, reason: o.reason } });
        rt.out.result(after, () => `asked to defer maintenance ${id} until ${o.until}: the provider decides`);
      }),
    );

  return maintenance;
}
