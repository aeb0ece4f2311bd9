import { Command, CommanderError, Option } from 'commander';
import { adminCommand } from './commands/admin.ts';
import { capacityCommand } from './commands/capacity.ts';
import { completionCommand } from './commands/completion.ts';
import { auditCommand } from './commands/audit.ts';
import { devCommand } from './commands/dev.ts';
import { instanceCommand } from './commands/instance.ts';
import { machineCommand } from './commands/machine.ts';
import { maintenanceCommand } from './commands/maintenance.ts';
import { metaInstanceCommand } from './commands/meta-instance.ts';
import { profileCommand } from './commands/profile.ts';
import { repairsCommand } from './commands/repairs.ts';
import { repairTicketsCommand } from './commands/repair-tickets.ts';
import { reservationCommand } from './commands/reservation.ts';
import { safetyCommand } from './commands/safety.ts';
import { tenantCommand } from './commands/tenant.ts';
import { versionCommand } from './commands/version.ts';
import { exitCodes } from './errors.ts';
import { chosenFormat, formats, Output } from './output.ts';
import type { RuntimeDeps } from './runtime.ts';

// The `fleetward` command line: global options, the command groups, and how a run ends (exit code, errors on
// stderr).

export function buildProgram(deps: RuntimeDeps = {}): Command {
  const program = new Command('fleetward')
    .description("Fleetward CLI: operate one site's GPU fleet over its HTTP API")
    .option('--url <url>', 'API base URL (env FLEETWARD_URL; default http://127.0.0.1:8080)')
    .option('--token <token>', 'bearer token (env FLEETWARD_TOKEN)')
    .option('--profile <name>', 'profile from the config file (env FLEETWARD_PROFILE; file: FLEETWARD_CONFIG or ~/.config/fleetward/config.json)')
    .addOption(new Option('-f, --format <format>', 'table for people, json or yaml for scripts (default: table)').choices(formats).conflicts('output'))
    .addOption(new Option('-o, --output <format>', 'same as --format (kubectl habit)').choices(formats));

  for (const make of [
    machineCommand,
    instanceCommand,
    metaInstanceCommand,
    maintenanceCommand,
    capacityCommand,
    reservationCommand,
    tenantCommand,
    safetyCommand,
    repairsCommand,
    repairTicketsCommand,
    auditCommand,
    adminCommand,
    versionCommand,
    devCommand,
    profileCommand,
    completionCommand,
  ]) {
    program.addCommand(make(deps));
  }
  // Commands built with `new Command()` do not inherit settings: apply them to the whole tree.
  const configure = (command: Command) => {
    command.exitOverride().showHelpAfterError('(add --help for usage)').showSuggestionAfterError().configureHelp({ showGlobalOptions: true });
    if (deps.streams) {
      const { stdout, stderr } = deps.streams;
      command.configureOutput({ writeOut: (s) => void stdout.write(s), writeErr: (s) => void stderr.write(s) });
    }
    command.commands.forEach(configure);
  };
  configure(program);
  return program;
}

/** Runs one command line; resolves to the exit code. `argv` is `process.argv` (node, script, args...). */
export async function main(argv: string[], deps: RuntimeDeps = {}): Promise<number> {
  const program = buildProgram(deps);
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and --version end with code 0; usage mistakes were already printed by commander.
      return error.exitCode === 0 ? 0 : exitCodes.usage;
    }
    return new Output(chosenFormat(program.opts()), deps.streams).error(error);
  }
}
