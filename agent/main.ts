#!/usr/bin/env node
// `fleetward-agent --config <agent.toml>`: the reference site agent (docs/agent.md). Needs Node 22+: run it as
// `npx fleetward-agent`, which finds the project's Node.
import { parseArgs } from 'node:util';

const usage = `usage: fleetward-agent --config <agent.toml>

The reference site agent: answers the controller's signed calls, drives the machines' BMCs (IPMI, Redfish), runs the
health probes and the site's hooks, and sends heartbeats. docs/agent.md is its manual.

options:
  -c, --config <file>   the agent's config (TOML); required
  -h, --help            this text`;

function fail(line: string): never {
  console.error(`fleetward-agent: ${line}`);
  process.exit(1);
}

let values: { config?: string | undefined; help?: boolean | undefined };
try {
  ({ values } = parseArgs({ options: { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' } } }));
} catch (error) {
  fail(`${(error as Error).message}; --help lists the options`);
}
if (values.help) {
  console.log(usage);
  process.exit(0);
}
if (!values.config) fail('--config <agent.toml> is required; --help lists the options');

// Loaded only once the arguments are good: --help and a usage error answer without compiling the daemon.
const [{ AgentConfigError, loadAgentConfig }, { startAgent }] = await Promise.all([import('./config/load.ts'), import('./daemon.ts')]);
const log = (line: string) => console.log(`${new Date().toISOString()} ${line}`);
try {
  const agent = await startAgent(loadAgentConfig(values.config), log);
  process.on('SIGHUP', () => agent.reloadKeys());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      log(`${signal}: stopping (work under way resumes at the next start)`);
      void agent.stop().then(() => process.exit(0));
    });
  }
} catch (error) {
  if (error instanceof AgentConfigError) fail(error.message);
  fail(`could not start: ${(error as Error).message}`);
}
