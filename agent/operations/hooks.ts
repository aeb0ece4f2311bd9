// A hook is the site's own command for a piece of work (docs/agent.md "Hooks"): it learns what to do from its
// environment, has its own timeout, and its exit status and last lines are the outcome the agent reports.

import type { MachineConfig } from '../config/schema.ts';
import { readSecret } from '../config/secret-ref.ts';
import type { AgentContext } from './context.ts';
import { readdirSync, readFileSync } from 'node:fs';
import { describeOutcome, lastLines, runCommand, type CommandOutcome } from './run-command.ts';

export type HookName = 'provision' | 'cleanup' | 'validate' | 'maintenance';

export interface HookResult {
  ok: boolean;
  /** The hook's last lines, or why it failed. */
  message: string;
  outcome?: CommandOutcome;
}

/** The machine and its BMC, as every hook sees them. The BMC password is there so a hook can drive the BMC itself. */
export function machineEnv(machine: MachineConfig): Record<string, string> {
  const env: Record<string, string> = {
    FLEETWARD_MACHINE_ID: machine.id,
    FLEETWARD_MACHINE_TYPE: machine.type,
    FLEETWARD_RACK: machine.rack,
    FLEETWARD_NVLINK_DOMAIN: machine.nvlink_domain ?? '',
    FLEETWARD_BMC_DRIVER: machine.bmc.driver,
    FLEETWARD_BMC_USER: machine.bmc.user,
  };
  if (machine.bmc.driver === 'ipmi') {
    Object.assign(env, {
      FLEETWARD_BMC_HOST: machine.bmc.host,
      FLEETWARD_BMC_PORT: String(machine.bmc.port),
      FLEETWARD_BMC_CIPHER_SUITE: String(machine.bmc.cipher_suite),
    });
  } else {
    env.FLEETWARD_BMC_URL = machine.bmc.url;
    if (machine.bmc.system) env.FLEETWARD_BMC_SYSTEM = machine.bmc.system;
  }
  try {
    const password = readSecret(machine.bmc.password);
    // ipmitool -E reads IPMI_PASSWORD: a hook's ipmitool needs no password on its command line.
    Object.assign(env, { FLEETWARD_BMC_PASSWORD: password, IPMI_PASSWORD: password });
  } catch {
    // The hook will find out from its BMC; the agent's own BMC calls report it.
  }
  return env;
}

/**
 * Runs the hook for `machine` with `extra` in its environment. A hook the config does not name has nothing to do:
 * `ok` for provision and cleanup (the machine is used as it is), refused for validate and maintenance (nothing
 * checked or done must never read as passed).
 */
export async function runHook(ctx: AgentContext, name: HookName, machine: MachineConfig, key: string, extra: Record<string, string>): Promise<HookResult> {
  const hook = ctx.config.hooks[name];
  if (!hook) {
    const required = name === 'validate' || name === 'maintenance';
    return { ok: !required, message: required ? `no ${name} hook is configured` : `no ${name} hook is configured: nothing to do` };
  }
  const timeoutMs = hook.timeout_seconds * 1000;
  ctx.log(`${name} hook for ${machine.id} starts`);
  // Named by the journal too: two agents on one host never take each other's hooks for their own.
  const hookKey = `${ctx.config.agent.journal}#${key}`;
  if (extra.FLEETWARD_RESUMED === '1') endOrphanedHooks(ctx, hookKey);
  const env = { ...machineEnv(machine), FLEETWARD_HOOK: name, FLEETWARD_HOOK_KEY: hookKey, ...extra };
  const outcome = await runCommand({ shell: hook.command, env, timeoutMs });
  const ok = outcome.code === 0 && !outcome.timedOut;
  const message = ok ? lastLines(outcome) || `${name} hook succeeded` : describeOutcome(`${name} hook`, outcome, timeoutMs);
  ctx.log(`${name} hook for ${machine.id}: ${ok ? 'ok' : message}`);
  return { ok, message: message.slice(0, 4000), outcome };
}

/**
 * A hook the agent started before a crash may still run, orphaned: it is ended before the work runs again, so the
 * machine never has two of them at once. Found by its environment (every hook carries FLEETWARD_HOOK_KEY, and what it
 * starts inherits it), not by a pid the agent would have had to journal before the crash.
 */
function endOrphanedHooks(ctx: AgentContext, key: string): void {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name) && name !== String(process.pid));
  } catch {
    return;
  }
  for (const pid of pids) {
    try {
      if (!readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`FLEETWARD_HOOK_KEY=${key}`)) continue;
      // The hook ran in a process group of its own: end the group, and with it whatever the hook started.
      const group = Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[2]);
      process.kill(group > 1 ? -group : Number(pid), 'SIGKILL');
      ctx.log(`ended a ${key} hook left running before the restart (pid ${pid})`);
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
}
