import { Command } from 'commander';
import { ApiError } from '../errors.ts';
import { renderTable } from '../output.ts';
import {
  action,
  addIssueOptions,
  addWaitOptions,
  collect,
  collectLabel,
  issueFrom,
  parsePositiveInt,
  type IssueFlags,
  type Runtime,
  type RuntimeDeps,
} from '../runtime.ts';
import { metaInstanceColumns, renderMetaInstance, type MetaInstance } from '../views.ts';
import { waitFor } from '../wait.ts';
import { addShowCommand, orgOption, type OrgOption, type WaitFlags } from './org-resource.ts';

// `fleetward meta-instance ...`: declarative capacity (`/v2/org/{org}/nico/meta-instance`).

const org = (rt: Runtime, o: OrgOption) => ({ path: { org: rt.org(o.org) } });
const one = (rt: Runtime, o: OrgOption, id: string) => ({ path: { org: rt.org(o.org), id } });
const getMeta = (rt: Runtime, o: OrgOption, id: string): Promise<MetaInstance> =>
  rt.client.get('/v2/org/{org}/nico/meta-instance/{id}', { params: one(rt, o, id) });

const describe = (m: MetaInstance) =>
  `${m.status}, ${m.instanceIds.length} of ${m.minNodes} instance(s), ${m.readyMembers} ready` +
  `${m.placementError ? ` (${m.placementError})` : m.lastFailureError ? ` (${m.lastFailureError})` : ''}`;
/** Placed, and every node's member Ready: what `--wait` waits for, since Ready alone says placement is done. */
const usable = (m: MetaInstance) => m.status === 'Ready' && m.readyMembers >= m.minNodes;

export function metaInstanceCommand(deps: RuntimeDeps): Command {
  const meta = new Command('meta-instance').description('meta-instances: keep N machines of a type for the org, optionally on one rack');

  addWaitOptions(
    meta
      .command('create')
      .description('ask for capacity; placed at once when it is available, else kept Placing until it is')
      .requiredOption('--machine-type <type>', 'machine type')
      .option('--min-nodes <n>', 'how many machines (1..24)', parsePositiveInt)
      .option('--machine-id <id>', 'pin a machine (repeatable)', collect)
      .option('--same-rack', 'all machines on one rack')
      .option('--label <key=value>', 'a label for its instances (repeatable)', collectLabel)
      .addOption(orgOption()),
    'the meta-instance is Ready',
  ).action(
    action(
      deps,
      async (
        rt,
        _args,
        o: OrgOption & WaitFlags & { machineType: string; minNodes?: number; machineId?: string[]; sameRack?: boolean; label?: Record<string, string> },
      ) => {
        let created = await rt.client.post('/v2/org/{org}/nico/meta-instance', {
          params: org(rt, o),
          body: {
            machineType: o.machineType,
            ...(o.minNodes !== undefined ? { minNodes: o.minNodes } : {}),
            ...(o.machineId ? { machineIds: o.machineId } : {}),
            ...(o.sameRack ? { placement: { sameRack: true } } : {}),
            ...(o.label ? { labels: o.label } : {}),
          },
        });
        if (o.wait && !usable(created)) {
          created = await waitFor({
            label: `meta-instance ${created.id}`,
            poll: () => getMeta(rt, o, created.id),
            check: (m) => (usable(m) ? 'done' : 'waiting'),
            describe,
            timeoutMs: o.timeout * 1000,
          });
        }
        rt.out.result(created, () => renderMetaInstance(created));
      },
    ),
  );

  meta
    .command('list')
    .description("the org's meta-instances")
    .option('--limit <n>', 'at most this many (default: all)', parsePositiveInt)
    .addOption(orgOption())
    .action(
      action(deps, async (rt, _args, o: OrgOption & { limit?: number }) => {
        const items = await rt.client.list('/v2/org/{org}/nico/meta-instance', { params: org(rt, o) }, o.limit);
        rt.out.result({ items }, () => (items.length === 0 ? 'no meta-instances' : renderTable(items, metaInstanceColumns)));
      }),
    );

  addShowCommand(meta, deps, { description: 'one meta-instance with its instances', argument: '<meta-instance-id>', get: getMeta, render: renderMetaInstance });

  addWaitOptions(
    meta.command('delete').description('delete a meta-instance; its instances are released with it').argument('<meta-instance-id>').addOption(orgOption()),
    'the meta-instance is gone',
  ).action(
    action(deps, async (rt, [id], o: OrgOption & WaitFlags) => {
      const deleted = await rt.client.delete('/v2/org/{org}/nico/meta-instance/{id}', { params: one(rt, o, id) });
      if (o.wait) {
        await waitFor<MetaInstance | null>({
          label: `meta-instance ${id}`,
          poll: () => getMeta(rt, o, id).catch((error: unknown) => (error instanceof ApiError && error.problem.status === 404 ? null : Promise.reject(error))),
          check: (m) => (m === null ? 'done' : 'waiting'),
          describe: (m) => (m === null ? 'deleted' : describe(m)),
          timeoutMs: o.timeout * 1000,
        });
        rt.out.result({ id, deleted: true }, () => `meta-instance ${id} deleted`);
        return;
      }
      rt.out.result(deleted, () => `deleting meta-instance ${id}\n${renderMetaInstance(deleted)}`);
    }),
  );

  addWaitOptions(
    addIssueOptions(
      meta
        .command('replace')
        .description('replace one member: a new one placed first when capacity allows, else at once; an issue quarantines the old machine')
        .argument('<meta-instance-id>')
        .argument('<instance-id>', 'the member to replace')
        .addOption(orgOption()),
    ),
    'the member is replaced',
  ).action(
    action(deps, async (rt, [id, instanceId], o: OrgOption & WaitFlags & IssueFlags) => {
      const issue = issueFrom(o);
      let replaced = await rt.client.post('/v2/org/{org}/nico/meta-instance/{id}/replace', {
        params: one(rt, o, id),
        body: { instanceId, ...(issue ? { issue } : {}) },
      });
      if (o.wait) {
        replaced = await waitFor({
          label: `replacement of ${instanceId} in meta-instance ${id}`,
          poll: () => getMeta(rt, o, id),
          check: (m) => (!m.instanceIds.includes(instanceId) && !m.memberReplacements?.length && m.instanceIds.length >= m.minNodes ? 'done' : 'waiting'),
          describe,
          timeoutMs: o.timeout * 1000,
        });
      }
      rt.out.result(replaced, () => renderMetaInstance(replaced));
    }),
  );

  return meta;
}
