import { Argument, Command, Option } from 'commander';
import { renderTable } from '../output.ts';
import {
  action,
  addIssueOptions,
  addWaitOptions,
  collectLabel,
  issueFrom,
  parsePositiveInt,
  type IssueFlags,
  type Runtime,
  type RuntimeDeps,
} from '../runtime.ts';
import { instanceColumns, renderInstance, type Instance } from '../views.ts';
import { waitFor } from '../wait.ts';
import { addShowCommand, orgOption, type OrgOption, type WaitFlags } from './org-resource.ts';

// `fleetward instance ...`: a tenant's instances (`/v2/org/{org}/nico/instance`).

type Status = Instance['status'];
const statuses: Status[] = ['Provisioning', 'Ready', 'Repairing', 'Terminating', 'Terminated', 'Failed'];

const org = (rt: Runtime, o: OrgOption) => ({ path: { org: rt.org(o.org) } });
const one = (rt: Runtime, o: OrgOption, id: string) => ({ path: { org: rt.org(o.org), id } });
const getInstance = (rt: Runtime, o: OrgOption, id: string): Promise<Instance> => rt.client.get('/v2/org/{org}/nico/instance/{id}', { params: one(rt, o, id) });

/** Polls the instance until `until` (or Failed, which fails the command). */
function waitForStatus(rt: Runtime, o: OrgOption & WaitFlags, id: string, until: Status): Promise<Instance> {
  return waitFor({
    label: `instance ${id}`,
    poll: () => getInstance(rt, o, id),
    check: (i) => (i.status === until ? 'done' : i.status === 'Failed' ? 'failed' : 'waiting'),
    describe: (i) => (i.failureReason ? `${i.status} (${i.failureReason})` : i.status),
    timeoutMs: o.timeout * 1000,
  });
}

export function instanceCommand(deps: RuntimeDeps): Command {
  const instance = new Command('instance').description("the org's instances: create, list, show, release, power, online repair");

  addWaitOptions(
    instance
      .command('create')
      .description('create an instance on a machine of a type, or on one machine (targeted; needs the capability)')
      .option('--machine-type <type>', 'any allocatable machine of this type')
      .option('--machine-id <id>', 'this machine (targeted instance creation)')
      .option('--name <name>', 'instance name (lower-case letters, digits, dashes)')
      .option('--label <key=value>', 'a label (repeatable)', collectLabel)
      .addOption(orgOption()),
    'the instance is Ready (or Failed)',
  ).action(
    action(deps, async (rt, _args, o: OrgOption & WaitFlags & { machineType?: string; machineId?: string; name?: string; label?: Record<string, string> }) => {
      let created = await rt.client.post('/v2/org/{org}/nico/instance', {
        params: org(rt, o),
        body: {
          ...(o.machineType !== undefined ? { machineType: o.machineType } : {}),
          ...(o.machineId !== undefined ? { machineId: o.machineId } : {}),
          ...(o.name !== undefined ? { name: o.name } : {}),
          ...(o.label ? { labels: o.label } : {}),
        },
      });
      if (o.wait && created.status !== 'Ready') created = await waitForStatus(rt, o, created.id, 'Ready');
      rt.out.result(created, () => renderInstance(created));
    }),
  );

  instance
    .command('list')
    .description("the org's instances, newest first")
    .addOption(new Option('--status <status>', 'only instances in this status').choices(statuses))
    .option('--limit <n>', 'at most this many (default: all)', parsePositiveInt)
    .addOption(orgOption())
    .action(
      action(deps, async (rt, _args, o: OrgOption & { status?: Status; limit?: number }) => {
        const items = await rt.client.list('/v2/org/{org}/nico/instance', { params: { ...org(rt, o), query: { status: o.status } } }, o.limit);
        rt.out.result({ items }, () => (items.length === 0 ? 'no instances' : renderTable(items, instanceColumns)));
      }),
    );

  addShowCommand(instance, deps, { description: 'one instance', argument: '<instance-id>', get: getInstance, render: renderInstance });

  addWaitOptions(
    addIssueOptions(
      instance
        .command('release')
        .description('release an instance, optionally reporting what was wrong with its machine (DELETE, as restish delete-instance)')
        .argument('<instance-id>')
        .option('--repair-tenant', "release as a repair tenant (needs targetedInstanceCreation); the machine's repair_status label decides")
        .addOption(orgOption()),
    ),
    'the instance is Terminated',
  ).action(
    action(deps, async (rt, [id], o: OrgOption & WaitFlags & IssueFlags & { repairTenant?: boolean }) => {
      const issue = issueFrom(o);
      let released = await rt.client.delete('/v2/org/{org}/nico/instance/{id}', {
        params: one(rt, o, id),
        body: { ...(issue ? { machineHealthIssue: issue } : {}), ...(o.repairTenant ? { isRepairTenant: true } : {}) },
      });
      if (o.wait && released.status !== 'Terminated') released = await waitForStatus(rt, o, id, 'Terminated');
      rt.out.result(released, () => renderInstance(released));
    }),
  );

  addWaitOptions(
    instance
      .command('power')
      .description('power-cycle, power off or power on a running instance through the site agent (202: pending)')
      .argument('<instance-id>')
      .addArgument(new Argument('<action>').choices(['cycle', 'off', 'on']))
      .addOption(orgOption()),
    'the site agent accepted the action (or it failed)',
  ).action(
    action(deps, async (rt, [id, powerAction], o: OrgOption & WaitFlags) => {
      let asked = await rt.client.post('/v2/org/{org}/nico/instance/{id}/power', { params: one(rt, o, id), body: { action: powerAction } });
      if (o.wait && asked.power?.result === 'pending') {
        asked = await waitFor({
          label: `power ${powerAction} of instance ${id}`,
          poll: () => getInstance(rt, o, id),
          check: (i) => (i.power?.result === 'accepted' ? 'done' : i.power?.result === 'failed' ? 'failed' : 'waiting'),
          describe: (i) => (i.power ? `${i.power.state}, ${i.power.result}${i.power.error ? ` (${i.power.error})` : ''}` : 'no power action'),
          timeoutMs: o.timeout * 1000,
        });
      }
      rt.out.result(asked, () => renderInstance(asked));
    }),
  );

  const onlineRepair = instance.command('online-repair').description('repair while keeping the instance (Ready ⇄ Repairing)');
  addIssueOptions(
    onlineRepair.command('enable').description('start online repair: the instance goes Ready → Repairing').argument('<instance-id>').addOption(orgOption()),
  ).action(
    action(deps, async (rt, [id], o: OrgOption & IssueFlags) => {
      const issue = issueFrom(o);
      const patched = await rt.client.patch('/v2/org/{org}/nico/instance/{id}', {
        params: one(rt, o, id),
        body: { onlineRepair: { enabled: true, ...(issue ? { issue } : {}) } },
      });
      rt.out.result(patched, () => renderInstance(patched));
    }),
  );
  onlineRepair
    .command('disable')
    .description('end online repair: the instance goes Repairing → Ready')
    .argument('<instance-id>')
    .addOption(orgOption())
    .action(
      action(deps, async (rt, [id], o: OrgOption) => {
        const patched = await rt.client.patch('/v2/org/{org}/nico/instance/{id}', { params: one(rt, o, id), body: { onlineRepair: { enabled: false } } });
        rt.out.result(patched, () => renderInstance(patched));
      }),
    );

  return instance;
}
