import { Command } from 'commander';
import { renderKeyValues, renderTable } from '../output.ts';
import { CliError, exitCodes } from '../errors.ts';
import { action, parseBoolean, type RuntimeDeps } from '../runtime.ts';

/** `gb200=10` → ['gb200', 10]; anything else is a usage error naming the argument. */
function quotaOf(arg: string): [string, number] {
  const match = /^([^=]+)=(\d+)$/.exec(arg);
  if (!match) throw new CliError(`a quota is <machineType>=<max machines>, e.g. gb200=10 (got "${arg}")`, exitCodes.usage);
  return [match[1]!, Number(match[2])];
}

type TenantView = { org: string; quotas: Record<string, number>; usage?: Record<string, number> | undefined };

/** One row per machine type with a quota or a count: its quota (none: -) and what the org holds. */
const renderQuotas = (view: TenantView) =>
  renderTable(
    [...new Set([...Object.keys(view.quotas), ...Object.keys(view.usage ?? {})])]
      .sort()
      .map((type) => ({ type, quota: view.quotas[type], used: view.usage?.[type] })),
    [
      { header: 'machine type', value: (r) => r.type },
      { header: 'quota', value: (r) => r.quota ?? '-' },
      { header: 'used', value: (r) => r.used ?? 0 },
    ],
  );

// `fleetward tenant set-capability <org> --targeted-instance-creation true|false` and
// `fleetward tenant quota set <org> <type>=<max>... | show <org>` (provider).

export function tenantCommand(deps: RuntimeDeps): Command {
  const tenant = new Command('tenant').description('tenant orgs and their capabilities (provider)');
  tenant
    .command('set-capability')
    .description("set a tenant org's capabilities")
    .argument('<org>')
    .requiredOption(
      '--targeted-instance-creation <bool>',
      'may create instances on a chosen machine, list machines and release as a repair tenant',
      parseBoolean,
    )
    .action(
      action(deps, async (rt, [org], o: { targetedInstanceCreation: boolean }) => {
        const view = await rt.client.put('/admin/tenants/{org}', {
          params: { path: { org } },
          body: { capabilities: { targetedInstanceCreation: o.targetedInstanceCreation } },
        });
        rt.out.result(view, () =>
          renderKeyValues([
            ['org', view.org],
            ['targetedInstanceCreation', view.capabilities.targetedInstanceCreation],
            ['updated', view.updatedAt],
          ]),
        );
      }),
    );
  const quota = tenant.command('quota').description("a tenant org's quotas per machine type (provider)");
  quota
    .command('set')
    .description("replace a tenant org's quotas: at most <max> machines of each type named; a type left out has none")
    .argument('<org>')
    .argument('[quotas...]', '<machineType>=<max machines>, e.g. gb200=10 (none: lift every quota)')
    .action(
      action(deps, async (rt, [org, quotas]) => {
        const body = { quotas: Object.fromEntries((quotas as string[]).map(quotaOf)) };
        const view = await rt.client.put('/admin/tenants/{org}', { params: { path: { org: org as string } }, body });
        rt.out.result(view, () => renderQuotas(view));
      }),
    );
  quota
    .command('show')
    .description("a tenant org's quotas and the machines of each type its instances hold now")
    .argument('<org>')
    .action(
      action(deps, async (rt, [org]) => {
        const view = await rt.client.get('/admin/tenants/{org}', { params: { path: { org: org as string } } });
        rt.out.result(view, () => renderQuotas(view));
      }),
    );
  return tenant;
}
