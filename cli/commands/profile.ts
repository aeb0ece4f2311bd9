import { Command } from 'commander';
import { configPath, readConfig, writeConfig, type Profile } from '../config.ts';
import { CliError } from '../errors.ts';
import { tokenClaims } from '../http.ts';
import { renderTable } from '../output.ts';
import { action, type RuntimeDeps } from '../runtime.ts';

// `fleetward profile set|list|use`: named connections in ~/.config/fleetward/config.json (or $FLEETWARD_CONFIG).

export function profileCommand(deps: RuntimeDeps): Command {
  const env = () => deps.env ?? process.env;
  const profile = new Command('profile').description('named API connections (url, token, org) in the config file');

  profile
    .command('set')
    .description('create or update a profile from the global --url and --token (`--token -` reads it from stdin)')
    .argument('<name>')
    .option('--org <org>', 'default tenant org')
    .option('--default', 'use this profile when none is named')
    .action(
      action(deps, async (rt, [name], o: Profile & { default?: boolean }) => {
        const file = configPath(env());
        const config = readConfig(file);
        let token = o.token;
        if (token === '-') token = (await readStdin()).trim();
        const next: Profile = { ...config.profiles[name] };
        // `--url` and `--token` are the global options: the values to store.
        if (o.url !== undefined) next.url = o.url;
        if (token !== undefined) next.token = token;
        if (o.org !== undefined) next.org = o.org;
        if (!next.url && !next.token) throw new CliError('give at least --url or --token', 2);
        config.profiles[name] = next;
        if (o.default || !config.defaultProfile) config.defaultProfile = name;
        writeConfig(file, config);
        rt.out.result(
          { profile: name, file, default: config.defaultProfile === name },
          () => `profile ${name} saved in ${file}${config.defaultProfile === name ? ' (default)' : ''}`,
        );
      }),
    );

  profile
    .command('list')
    .description('the profiles (tokens are not shown)')
    .action(
      action(deps, async (rt) => {
        const config = readConfig(configPath(env()));
        const rows = Object.entries(config.profiles).map(([name, p]) => {
          const claims = tokenClaims(p.token);
          return { name, default: config.defaultProfile === name, url: p.url, org: p.org ?? claims?.org, sub: claims?.sub, roles: claims?.roles ?? [] };
        });
        rt.out.result({ defaultProfile: config.defaultProfile, profiles: rows }, () =>
          rows.length === 0
            ? `no profiles in ${configPath(env())}`
            : renderTable(rows, [
                { header: '', value: (r) => (r.default ? '*' : ' ') },
                { header: 'name', value: (r) => r.name },
                { header: 'url', value: (r) => r.url },
                { header: 'org', value: (r) => r.org },
                { header: 'sub', value: (r) => r.sub },
                { header: 'roles', value: (r) => r.roles },
              ]),
        );
      }),
    );

  profile
    .command('use')
    .description('make a profile the default')
    .argument('<name>')
    .action(
      action(deps, async (rt, [name]) => {
        const file = configPath(env());
        const config = readConfig(file);
        if (!config.profiles[name]) throw new CliError(`no profile "${name}" in ${file}`, 2);
        config.defaultProfile = name;
        writeConfig(file, config);
        rt.out.result({ defaultProfile: name }, () => `default profile: ${name}`);
      }),
    );

  return profile;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
