import { Command } from 'commander';
import { stringify } from 'smol-toml';
import { version as cliVersion } from '#http/version.ts';
import { action, type RuntimeDeps } from '../runtime.ts';

// `fleetward version [--show-runtime-config]`: the CLI's version; with the flag, the site's version and the site
// config in force (GET /admin/config), printed as the TOML it came from.

export function versionCommand(deps: RuntimeDeps): Command {
  return new Command('version')
    .description('the CLI version; --show-runtime-config adds the site version and its config in force (provider)')
    .option('--show-runtime-config', 'show the site config in force (GET /admin/config)')
    .action(
      action(deps, async (rt, _args, o: { showRuntimeConfig?: boolean }) => {
        if (!o.showRuntimeConfig) {
          rt.out.result({ cli: cliVersion }, () => `fleetward CLI ${cliVersion}`);
          return;
        }
        const site = await rt.client.get('/admin/config');
        rt.out.result({ cli: cliVersion, ...site }, () =>
          [`fleetward CLI ${cliVersion}`, `site ${rt.client.url}: fleetward ${site.version}`, '', '# runtime config', stringify(site.config)].join('\n'),
        );
      }),
    );
}
