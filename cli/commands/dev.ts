import { Command } from 'commander';
import { action, type RuntimeDeps } from '../runtime.ts';

// `fleetward dev token`: a token from the local runner (POST /_local/token; never deployed).

const roles = ['tenant', 'provider-admin', 'site-agent'];

export function devCommand(deps: RuntimeDeps): Command {
  const dev = new Command('dev').description('helpers for the local runner (npm start)');
  dev
    .command('token')
    .description('mint a token on the local runner and print it')
    .requiredOption('--sub <sub>', 'who the caller is')
    .requiredOption('--org <org>', "the caller's tenant org")
    .requiredOption('--roles <roles>', `comma-separated: ${roles.join(', ')}`, (value: string) =>
      value
        .split(',')
        .map((r) => r.trim())
        .filter(Boolean),
    )
    .action(
      action(deps, async (rt, _args, o: { sub: string; org: string; roles: string[] }) => {
        const token = await rt.client.mintLocalToken({ sub: o.sub, org: o.org, roles: o.roles });
        rt.out.result({ token }, () => token);
      }),
    );
  return dev;
}
