// OpenIPMI's `ipmi_sim` as the BMC of a machine that is not there (the local site's, the tests'): one simulator per
// machine on its own UDP port, speaking IPMI 2.0 (lanplus) like a real BMC. Its "power on" starts a process standing
// for the machine (lan.conf `startcmd`, through the VM serial interface that gives ipmi_sim its power control), and
// "power off" ends it, so what the agent did to the power can be seen in the process table.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

export interface SimulatedBmc {
  machineId: string;
  host: string;
  port: number;
  user: string;
  password: string;
  /** Whether the process standing for the machine is running (the machine is "on"). */
  machineRunning(): boolean;
  /** The pid of that process, if running: a cycle changes it. */
  machinePid(): number | undefined;
  stop(): Promise<void>;
}

export interface IpmiSimOptions {
  machineId: string;
  /** Where the simulator keeps its config, state and the machine's pid file. */
  dir: string;
  password?: string;
  /** SEL records to hold at start, as `sel_add` arguments after the MC address (13 bytes each, hex). */
  selRecords?: string[];
  /** Start with the machine on. */
  poweredOn?: boolean;
}

/** Whether ipmi_sim and ipmitool are installed (Debian: `apt-get install openipmi ipmitool`). */
export function ipmiToolsInstalled(): boolean {
  return ['ipmi_sim', 'ipmitool'].every((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0);
}

/** A port free right now on 127.0.0.1 (UDP for IPMI's LAN channel, TCP for the serial one). */
export async function freePort(kind: 'udp' | 'tcp'): Promise<number> {
  if (kind === 'tcp') {
    return new Promise((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
  }
  return new Promise((resolve, reject) => {
    const socket = createSocket('udp4');
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => {
      const { port } = socket.address();
      socket.close(() => resolve(port));
    });
  });
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

export async function startIpmiSim(options: IpmiSimOptions): Promise<SimulatedBmc> {
  const user = 'admin';
  const password = options.password ?? 'fleetward-bmc';
  const [port, serialPort] = [await freePort('udp'), await freePort('tcp')];
  mkdirSync(join(options.dir, 'state'), { recursive: true });
  const pidFile = join(options.dir, 'machine.pid');
  // The machine: a shell that records its pid and waits; `exec sleep` keeps that pid until power off ends it.
  const machine = `sh -c 'echo $$ > ${pidFile}; exec sleep 2147483'`;
  writeFileSync(
    join(options.dir, 'lan.conf'),
    [
      `name "${options.machineId.replace(/[^A-Za-z0-9_-]/g, '_')}"`,
      'set_working_mc 0x20',
      '  startlan 1',
      `    addr 127.0.0.1 ${port}`,
      '    priv_limit admin',
      '    allowed_auths_callback none md2 md5 straight',
      '    allowed_auths_user none md2 md5 straight',
      '    allowed_auths_operator none md2 md5 straight',
      '    allowed_auths_admin none md2 md5 straight',
      '    guid a123456789abcdefa123456789abcdef',
      '  endlan',
      `  serial 15 127.0.0.1 ${serialPort} codec VM`,
      `  startcmd "${machine.replace(/"/g, '\\"')}"`,
      `  startnow ${options.poweredOn ? 'true' : 'false'}`,
      // No VM connects to the serial port, so "off" is a SIGTERM at once; a second later a SIGKILL.
      '  poweroff_wait 1',
      '  kill_wait 1',
      `  user 2 true "${user}" "${password}" admin 10 none md2 md5 straight`,
      '',
    ].join('\n'),
  );
  writeFileSync(
    join(options.dir, 'bmc.emu'),
    [
      'mc_setbmc 0x20',
      'mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02',
      'sel_enable 0x20 1000 0x0a',
      ...(options.selRecords ?? []).map((record) => `sel_add 0x20 ${record}`),
      'mc_enable 0x20',
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn('ipmi_sim', ['-c', 'lan.conf', '-f', 'bmc.emu', '-s', join(options.dir, 'state'), '-n'], {
    cwd: options.dir,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  await waitForUdp(
    port,
    () => child.exitCode !== null,
    () => `ipmi_sim for ${options.machineId} exited: ${stderr}`,
  );
  const machinePid = () => {
    try {
      const pid = Number(spawnSync('cat', [pidFile], { encoding: 'utf8' }).stdout.trim());
      return pid > 0 && isAlive(pid) ? pid : undefined;
    } catch {
      return undefined;
    }
  };
  return {
    machineId: options.machineId,
    host: '127.0.0.1',
    port,
    user,
    password,
    machineRunning: () => machinePid() !== undefined,
    machinePid,
    async stop() {
      const pid = machinePid();
      if (pid !== undefined) process.kill(pid, 'SIGKILL');
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** ipmi_sim binds its port after reading its files: wait until the port is taken (binding it fails). */
async function waitForUdp(port: number, died: () => boolean, why: () => string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (died()) throw new Error(why());
    const taken = await new Promise<boolean>((resolve) => {
      const socket = createSocket('udp4');
      socket.once('error', () => resolve(true));
      socket.bind(port, '127.0.0.1', () => socket.close(() => resolve(false)));
    });
    if (taken) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`ipmi_sim did not take UDP port ${port}: ${why()}`);
}
