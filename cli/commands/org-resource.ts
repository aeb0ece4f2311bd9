import { Option, type Command } from 'commander';
import { action, type Runtime, type RuntimeDeps } from '../runtime.ts';

// What `instance` and `meta-instance` share: both are a tenant org's collection (`/v2/org/{org}/nico/...`).

export interface OrgOption {
  org?: string;
}

/** The options addWaitOptions adds. */
export interface WaitFlags {
  wait?: boolean;
  timeout: number;
}

export const orgOption = () => new Option('--org <org>', 'tenant org (default: FLEETWARD_ORG, the profile, or the token)');

/** `<noun> show <id>`: one item of the org, as a block for people or as JSON. */
export function addShowCommand<T>(
  parent: Command,
  deps: RuntimeDeps,
  show: { description: string; argument: string; get: (rt: Runtime, o: OrgOption, id: string) => Promise<T>; render: (item: T) => string },
): void {
  parent
    .command('show')
    .description(show.description)
    .argument(show.argument)
    .addOption(orgOption())
    .action(
      action(deps, async (rt, [id], o: OrgOption) => {
        const found = await show.get(rt, o, id);
        rt.out.result(found, () => show.render(found));
      }),
    );
}
