import { Command } from 'commander';
import { renderKeyValues } from '../output.ts';
import { action, parseBoolean, type RuntimeDeps } from '../runtime.ts';

// `fleetward tenant set-capability <org> --targeted-instance-creation true|false` (provider).

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
  return tenant;
}
