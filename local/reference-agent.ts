// FLEETWARD_AGENT=reference: the local site's machines behind the reference agent (agent/) instead of the simulator.
// Each machine of `[simulator] machines` gets an OpenIPMI ipmi_sim BMC of its own, whose "power on" starts a
// process standing for the machine; the agent runs as its own process, as at a real site, with the example hooks.
// The simulator stays in the runner only for its counters: its /_sim controls answer 404 (they play the simulator).

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, ipmiToolsInstalled, startIpmiSim, type SimulatedBmc } from '#agent/support/ipmi-sim.ts';
import type { SigningKey } from '#site/request-signing.ts';
import type { SimulatedMachine } from './site-agent/demo-fleet.ts';
import type { SiteSimulator } from './site-agent/simulator.ts';

const REPO_ROOT = join(import.meta.dirname, '..');
const HOOKS = join(REPO_ROOT, 'agent/examples/hooks');
/** ipmi_sims started at once: a 40-machine fleet comes up in a few seconds without flooding two cores. */
const PARALLEL_STARTS = 8;

export interface ReferenceAgentSite {
  /** The agent's URL, known before it starts so the controller can be built first. */
  url: string;
  /** Starts the agent process once the controller answers (it asks the controller for its token). */
  start(controllerUrl: string): Promise<void>;
  running(): boolean;
  stop(): Promise<void>;
}

export async function prepareReferenceAgent(options: {
  machines: SimulatedMachine[];
  signingKey: SigningKey;
  heartbeatIntervalSeconds: number;
  heartbeatParts: number;
  /** Keep the journal and the BMCs' state here (FLEETWARD_DATA_DIR); a temporary folder otherwise. */
  dataDir?: string;
  log: (line: string) => void;
}): Promise<ReferenceAgentSite> {
  if (!ipmiToolsInstalled()) throw new Error('FLEETWARD_AGENT=reference needs ipmi_sim and ipmitool: apt-get install -y openipmi ipmitool');
  const dir = options.dataDir ? join(options.dataDir, 'reference-agent') : mkdtempSync(join(tmpdir(), 'fleetward-reference-agent-'));
  mkdirSync(dir, { recursive: true });
  const bmcs: SimulatedBmc[] = [];
  const queue = [...options.machines];
  await Promise.all(
    Array.from({ length: PARALLEL_STARTS }, async () => {
      for (let m = queue.shift(); m; m = queue.shift()) bmcs.push(await startIpmiSim({ machineId: m.id, dir: join(dir, 'bmc', m.id), password: 'local-bmc' }));
    }),
  );
  const bmcOf = new Map(bmcs.map((b) => [b.machineId, b]));
  const port = await freePort('tcp');
  writeFileSync(join(dir, 'signing-keys.json'), JSON.stringify({ keys: [options.signingKey], current: options.signingKey.id }), { mode: 0o600 });
  options.log(`${bmcs.length} ipmi_sim BMCs on 127.0.0.1 (ports ${Math.min(...bmcs.map((b) => b.port))}…); state in ${dir}`);
  let child: ChildProcess | undefined;

  return {
    url: `http://127.0.0.1:${port}`,
    running: () => child !== undefined && child.exitCode === null,
    async start(controllerUrl) {
      const configPath = join(dir, 'agent.toml');
      writeFileSync(configPath, agentToml({ ...options, dir, port, controllerUrl, bmcOf }));
      child = spawn(process.execPath, [join(REPO_ROOT, 'agent/main.ts'), '--config', configPath], {
        cwd: REPO_ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          ...process.env,
          LOCAL_BMC_PASSWORD: 'local-bmc',
          // The machines are processes: "up" is the BMC saying so, and there is no GPU to check or diagnose.
          PROVISION_READY_COMMAND: `. ${HOOKS}/ipmi.sh && bmc chassis power status | grep -q "is on"`,
          PROVISION_CHECK_COMMAND: 'true',
          PROVISION_POLL_SECONDS: '0.2',
          PROVISION_WAIT_SECONDS: '8',
          DCGM_DIAG_COMMAND: `cat ${join(REPO_ROOT, 'agent/examples/local/dcgm-diag-r1.json')}`,
        },
      });
      const started = new Promise<void>((resolve, reject) => {
        let said = '';
        const onLine = (chunk: Buffer) => {
          said += chunk.toString();
          for (const line of chunk.toString().split('\n')) if (line.trim()) options.log(line.replace(/^\S+ /, ''));
          if (said.includes('listening on')) resolve();
        };
        child!.stdout?.on('data', onLine);
        child!.stderr?.on('data', onLine);
        child!.once('exit', (code) => reject(new Error(`the reference agent exited ${code}: ${said.trim().split('\n').at(-1)}`)));
      });
      await started;
    },
    async stop() {
      if (child && child.exitCode === null) {
        const exited = new Promise((resolve) => child!.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      await Promise.all(bmcs.map((b) => b.stop()));
      if (!options.dataDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

function agentToml(o: {
  machines: SimulatedMachine[];
  dir: string;
  port: number;
  controllerUrl: string;
  heartbeatIntervalSeconds: number;
  heartbeatParts: number;
  bmcOf: Map<string, SimulatedBmc>;
}): string {
  const machines = o.machines.map((m) => {
    const bmc = o.bmcOf.get(m.id)!;
    return [
      '[[machines]]',
      `id = "${m.id}"`,
      `type = "${m.machineType}"`,
      `rack = "${m.rack}"`,
      ...(m.nvlinkDomain ? [`nvlink_domain = "${m.nvlinkDomain}"`] : []),
      `bmc = { driver = "ipmi", host = "${bmc.host}", port = ${bmc.port}, user = "${bmc.user}", password = { env = "LOCAL_BMC_PASSWORD" } }`,
      'probes = [{ kind = "sel" }]',
    ].join('\n');
  });
  return `# Written by the local runner for FLEETWARD_AGENT=reference (local/reference-agent.ts).
[agent]
listen_port = ${o.port}
journal = "${join(o.dir, 'journal.jsonl')}"
heartbeat_interval_seconds = ${o.heartbeatIntervalSeconds}
heartbeat_parts = ${o.heartbeatParts}
# The BMCs' event logs read every few beats: a fault injected into one shows within seconds.
probe_interval_seconds = ${o.heartbeatIntervalSeconds * 6}

[controller]
url = "${o.controllerUrl}"
token = { local_runner = true }

[signing]
keys_file = "${join(o.dir, 'signing-keys.json')}"

[hooks]
provision = { command = "${HOOKS}/provision-netboot.sh", timeout_seconds = 9 }
cleanup = { command = "${HOOKS}/cleanup-poweroff.sh", timeout_seconds = 30 }
validate = { command = "${HOOKS}/validate-dcgm.mjs", timeout_seconds = 60 }
maintenance = { command = "echo maintenance $FLEETWARD_CATEGORY done on $FLEETWARD_MACHINE_ID", timeout_seconds = 30 }

${machines.join('\n\n')}
`;
}

/** The simulator as the runner's routes see it when the reference agent runs the site: its /_sim controls are gone. */
export function withoutSimulatorControls(simulator: SiteSimulator): SiteSimulator {
  return Object.assign(Object.create(simulator) as SiteSimulator, {
    control: async () => undefined,
    handleControl: async () => false,
  });
}
