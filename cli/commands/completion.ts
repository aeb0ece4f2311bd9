import { Argument, Command } from 'commander';
import { bashCompletion, zshCompletion } from '../completion.ts';
import type { RuntimeDeps } from '../runtime.ts';

// `fleetward completion bash|zsh`: prints the shell completion script (install: docs/cli.md "Shell completion").

const scripts = { bash: bashCompletion, zsh: zshCompletion };

export function completionCommand(deps: RuntimeDeps): Command {
  return new Command('completion')
    .description('print the shell completion script: source <(fleetward completion bash)')
    .addArgument(new Argument('<shell>', 'the shell').choices(Object.keys(scripts)))
    .action((shell: keyof typeof scripts, _options: unknown, command: Command) => {
      let root = command;
      while (root.parent) root = root.parent;
      (deps.streams?.stdout ?? process.stdout).write(scripts[shell](root));
    });
}
