import { Command } from 'commander';
import { stringify } from 'smol-toml';
import { version as cliVersion } from '#http/version.ts';
import { action, type RuntimeDeps } from '../runtime.ts';

// `fleetward version [--local] [--show-runtime-config]`: the CLI's release, and with a provider's token the site's
// (GET /admin/config): the release its code is, the data version its table holds, and the migrations still to run.
// --local (or no provider token) asks no site; --show-runtime-config adds the site config in force, as TOML.

export function versionCommand(deps: RuntimeDeps): Command {
  return new Command('version')
    .description("the CLI's release and the site's: its code's release, its table's data version and pending migrations (provider)")
    .option('--local', 'the CLI only: ask no site')
    .option('--show-runtime-config', 'also show the site config in force (GET /admin/config)')
    .action(
      action(deps, async (rt, _args, o: { local?: boolean; showRuntimeConfig?: boolean }) => {
        if (o.local || (!o.showRuntimeConfig && !rt.isProviderAdmin())) {
          rt.out.result({ cli: cliVersion }, () => `fleetward CLI ${cliVersion}`);
          return;
        }
        const { config, ...site } = await rt.client.get('/admin/config');
        const { pending, running } = site.migrations;
        const lines = [
          `fleetward CLI ${cliVersion}`,
          `site ${rt.client.url}: release ${site.release}, data version ${site.dataVersion} of ${site.latestDataVersion}` +
            (pending + running > 0 ? ` (${running} migration(s) running, ${pending} pending: fleetward admin migrations)` : ''),
        ];
        if (!o.showRuntimeConfig) {
          rt.out.result({ cli: cliVersion, ...site }, () => lines.join('\n'));
          return;
        }
        rt.out.result({ cli: cliVersion, ...site, config }, () => [...lines, '', '# runtime config', stringify(config)].join('\n'));
      }),
    );
}
