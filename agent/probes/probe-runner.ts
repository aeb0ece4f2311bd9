// Runs each machine's probes on a schedule and keeps what they last found, which every heartbeat carries. A probe
// that cannot run says so as its own alert (not one that keeps the machine out: it tells nothing of the hardware).

import type { AgentAlertBody } from '#site/agent-contract.ts';
import type { MachineConfig, ProbeConfig } from '../config/schema.ts';
import type { BmcDriver } from '../drivers/driver.ts';
import { describeOutcome, runCommand } from '../operations/run-command.ts';
import { commandProbeAlerts } from './command-probe.ts';
import { dcgmHealthFindings } from './dcgm.ts';
import { alertOf, type Finding } from './findings.ts';
import { nvidiaSmiFindings } from './nvidia-smi.ts';

/** The heartbeat contract's bound on alerts per machine. */
const MAX_ALERTS = 64;
/** Probes run at once across the site: a fleet's ssh or BMC sessions are not all opened in the same second. */
const PARALLEL_PROBES = 8;

export interface ProbeRunner {
  alertsOf(machineId: string): AgentAlertBody[] | undefined;
  /** Runs every machine's probes once (the first round at start, then each interval). */
  runAll(): Promise<void>;
  start(intervalMs: number): void;
  stop(): Promise<void>;
}

export function createProbeRunner(machines: readonly MachineConfig[], drivers: ReadonlyMap<string, BmcDriver>, log: (line: string) => void): ProbeRunner {
  const latest = new Map<string, AgentAlertBody[]>();
  let timer: NodeJS.Timeout | undefined;
  let round: Promise<void> | undefined;

  async function probeMachine(machine: MachineConfig): Promise<void> {
    const alerts: AgentAlertBody[] = [];
    for (const probe of machine.probes) alerts.push(...(await runProbe(machine, probe)));
    const unique = [...new Map(alerts.map((a) => [a.id, a])).values()].slice(0, MAX_ALERTS);
    if (unique.length === 0) latest.delete(machine.id);
    else latest.set(machine.id, unique);
  }

  async function runProbe(machine: MachineConfig, probe: ProbeConfig): Promise<AgentAlertBody[]> {
    const env = { FLEETWARD_MACHINE_ID: machine.id, FLEETWARD_MACHINE_TYPE: machine.type, FLEETWARD_RACK: machine.rack };
    try {
      if (probe.kind === 'sel') return (await drivers.get(machine.id)!.healthFindings()).map((f) => alertOf('sel', f));
      const timeoutMs = probe.timeout_seconds * 1000;
      const outcome = await runCommand({ shell: probe.command, env, timeoutMs });
      if (probe.kind === 'nvidia-smi') {
        const findings = nvidiaSmiFindings(outcome, machine.gpus);
        // A failure nvidia-smi explained (a lost GPU, no driver) is the finding; any other is the probe's own.
        if (outcome.code !== 0 && findings.length === 0) return [failed(probe.kind, describeOutcome('nvidia-smi', outcome, timeoutMs))];
        return findings.map((f) => alertOf('nvidia-smi', f));
      }
      if (outcome.code !== 0) return [failed(probe.kind, describeOutcome(probe.kind, outcome, timeoutMs))];
      if (probe.kind === 'dcgm') return dcgmHealthFindings(outcome.stdout).map((f) => alertOf('dcgm', f));
      return commandProbeAlerts(outcome.stdout);
    } catch (error) {
      return [failed(probe.kind, (error as Error).message)];
    }
  }

  function failed(probe: string, message: string): AgentAlertBody {
    log(`probe ${probe}: ${message}`);
    const finding: Finding = { kind: 'probe-failed', subject: probe, message };
    return alertOf(probe, finding);
  }

  async function runAll(): Promise<void> {
    const queue = machines.filter((m) => m.probes.length > 0);
    const workers = Array.from({ length: Math.min(PARALLEL_PROBES, queue.length) }, async () => {
      for (let next = queue.shift(); next; next = queue.shift()) await probeMachine(next);
    });
    await Promise.all(workers);
  }

  return {
    alertsOf: (machineId) => latest.get(machineId),
    runAll,
    start(intervalMs) {
      const tick = () => {
        round = runAll().finally(() => {
          if (timer !== undefined) timer = setTimeout(tick, intervalMs);
        });
      };
      timer = setTimeout(tick, 0);
    },
    async stop() {
      clearTimeout(timer);
      timer = undefined;
      await round;
    },
  };
}
