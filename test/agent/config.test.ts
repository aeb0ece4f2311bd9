import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentConfigError, parseAgentConfig } from '#agent/config/load.ts';
import { rosterBucket } from '#agent/controller/roster-part.ts';
import { bucketOf } from '#domain/machines/heartbeat.ts';
import { REPO_ROOT } from './support/agent-process.ts';

const dir = mkdtempSync(join(tmpdir(), 'agent-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const minimal = `
[agent]
listen_port = 9400
journal = "/var/lib/fleetward-agent/journal.jsonl"
[controller]
url = "https://api.fleet.example"
token = { file = "/run/fleetward/site-agent.token" }
[signing]
keys_file = "/etc/fleetward/signing-keys.json"
[[machines]]
id = "gb200-r1-01"
type = "gb200"
rack = "rack-1"
nvlink_domain = "gb200-nvl1"
gpus = 4
bmc = { driver = "redfish", url = "https://10.0.0.12", password = { env = "BMC_PASSWORD" }, user = "root" }
probes = [{ kind = "nvidia-smi", command = "ssh gb200-r1-01 nvidia-smi -q -x" }, { kind = "sel" }]
`;

/** What the loader refuses a config with (main.ts prints it after `fleetward-agent: `), or undefined if it takes it. */
function refusal(config: string): string | undefined {
  try {
    parseAgentConfig(config, '<config>');
  } catch (error) {
    if (error instanceof AgentConfigError) return error.message;
    throw error;
  }
  return undefined;
}

/** Runs the bin as a site would, on a config file; its exit status and what it printed. */
function runBin(config: string): { status: number | null; stderr: string } {
  const path = join(dir, `c-${Math.random().toString(36).slice(2)}.toml`);
  writeFileSync(path, config);
  const run = spawnSync(process.execPath, [join(REPO_ROOT, 'agent/main.ts'), '--config', path], { encoding: 'utf8', timeout: 20_000 });
  return { status: run.status, stderr: run.stderr.replace(path, '<config>') };
}

describe('the agent config', () => {
  it('fills the defaults of what it leaves out', () => {
    const config = parseAgentConfig(minimal, 'agent.toml');
    expect(config.agent).toMatchObject({ listen_host: '127.0.0.1', heartbeat_interval_seconds: 10, heartbeat_parts: 1, probe_interval_seconds: 60 });
    expect(config.machines[0]!.bmc).toMatchObject({ driver: 'redfish', auth: 'session', tls_verify: true, timeout_seconds: 20 });
    expect(config.machines[0]!.probes).toEqual([{ kind: 'nvidia-smi', command: 'ssh gb200-r1-01 nvidia-smi -q -x', timeout_seconds: 30 }, { kind: 'sel' }]);
  });

  it('a bad config stops the daemon with one line naming the key, and exit 1', () => {
    const cases: Array<[string, string]> = [
      [minimal.replace('listen_port = 9400', 'listen_port = 9400\nlisten_prot = 1'), '<config>: agent: Unrecognized key: "listen_prot"'],
      [minimal.replace('driver = "redfish"', 'driver = "smash"'), "<config>: machines.0.bmc.driver: Invalid discriminator value. Expected 'ipmi' | 'redfish'"],
      [minimal.replace('password = { env = "BMC_PASSWORD" }', 'password = "calvin"'), '<config>: machines.0.bmc.password: Invalid input'],
      [`${minimal}${minimal.slice(minimal.indexOf('[[machines]]'))}`, '<config>: machines.1.id: machine gb200-r1-01 is listed twice'],
      ['[agent', '<config>: not TOML: '],
    ];
    for (const [config, message] of cases) expect(refusal(config)?.startsWith(message), refusal(config)).toBe(true);
    // The daemon prints the refusal as one line and exits 1.
    const { status, stderr } = runBin(cases[0]![0]);
    expect([status, stderr]).toEqual([1, `fleetward-agent: ${cases[0]![1]}\n`]);
  });

  it('--help says how to run it; no --config is one line and exit 1', () => {
    const help = spawnSync(process.execPath, [join(REPO_ROOT, 'agent/main.ts'), '--help'], { encoding: 'utf8' });
    expect([help.status, help.stdout.split('\n')[0]]).toEqual([0, 'usage: fleetward-agent --config <agent.toml>']);
    const bare = spawnSync(process.execPath, [join(REPO_ROOT, 'agent/main.ts')], { encoding: 'utf8' });
    expect([bare.status, bare.stderr]).toEqual([1, 'fleetward-agent: --config <agent.toml> is required; --help lists the options\n']);
  });

  it('a config whose secrets cannot be read stops it too, naming where it looked', () => {
    const { status, stderr } = runBin(minimal);
    expect(status).toBe(1);
    expect(stderr).toBe('fleetward-agent: signing: cannot read /etc/fleetward/signing-keys.json: ENOENT\n');
  });

  it('buckets machines for roster parts exactly as the controller does', () => {
    for (const id of ['gb200-r1-01', 'h100-r9-17', 'a', 'x'.repeat(128)]) expect(String(rosterBucket(id)).padStart(2, '0')).toBe(bucketOf(id));
  });
});
