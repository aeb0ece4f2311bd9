import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BmcError } from '#agent/drivers/driver.ts';
import { ipmiDriver } from '#agent/drivers/ipmi.ts';
import { freePort, startIpmiSim, type SimulatedBmc } from '#agent/support/ipmi-sim.ts';
import { ipmiTools } from './support/tools.ts';

const dir = mkdtempSync(join(tmpdir(), 'agent-ipmi-'));
const until = async (check: () => boolean, ms = 5_000) => {
  for (const start = Date.now(); !check(); ) {
    if (Date.now() - start > ms) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

const untilAsync = async (check: () => Promise<boolean>, ms = 5_000) => {
  for (const start = Date.now(); !(await check()); ) {
    if (Date.now() - start > ms) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

describe.skipIf(!ipmiTools).concurrent('the IPMI driver against ipmi_sim (ipmitool -I lanplus)', () => {
  let bmc: SimulatedBmc;
  // Each driver reads its password from a variable of its own: the tests run at once, mostly waiting on ipmitool.
  let drivers = 0;
  const driverOf = (password: string, port = bmc.port, timeout_seconds = 4) => {
    const env = `AGENT_TEST_BMC_PASSWORD_${++drivers}`;
    process.env[env] = password;
    return ipmiDriver({ driver: 'ipmi', host: bmc.host, port, user: bmc.user, password: { env }, cipher_suite: 3, timeout_seconds });
  };

  beforeAll(async () => {
    bmc = await startIpmiSim({
      machineId: 'ipmi-test-01',
      dir,
      // Memory uncorrectable ECC (sensor type 0x0c, offset 1) and a temperature over its upper critical threshold.
      selRecords: [
        '0x02 0x00 0x00 0x60 0x65 0x20 0x00 0x04 0x0c 0x01 0x6f 0x01 0xff 0xff',
        '0x02 0x00 0x00 0x60 0x65 0x20 0x00 0x04 0x01 0x30 0x01 0x09 0x55 0x50',
      ],
    });
  });
  afterAll(async () => {
    await bmc?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('powers the machine on, cycles it (a new process) and off, reading the state back each time', async () => {
    const driver = driverOf(bmc.password);
    expect(await driver.powerState()).toBe('off');
    await driver.power('on');
    await until(() => bmc.machineRunning());
    expect(await driver.powerState()).toBe('on');
    const before = bmc.machinePid();
    await driver.power('cycle');
    await until(() => bmc.machinePid() !== undefined && bmc.machinePid() !== before);
    // The BMC tells "off" for the cycle's interval, then "on".
    await untilAsync(async () => (await driver.powerState()) === 'on');
    await driver.power('off');
    await until(() => !bmc.machineRunning());
    expect(await driver.powerState()).toBe('off');
  });

  it('refused credentials fail with what ipmitool said, never as success', async () => {
    const error = await driverOf('not-the-password')
      .power('on')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BmcError);
    expect((error as Error).message).toMatch(/^BMC 127\.0\.0\.1:\d+: "chassis power on" failed: .*(RMCP\+|session)/s);
  });

  it('a BMC that does not answer fails within the timeout, with ipmitool’s words', async () => {
    const silent = await freePort('udp');
    const started = Date.now();
    const error = await driverOf(bmc.password, silent, 2)
      .powerState()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BmcError);
    expect((error as Error).message).toContain(`BMC 127.0.0.1:${silent}`);
    expect(Date.now() - started).toBeLessThan(8_000);
  });

  it('reads the SEL into findings', async () => {
    const findings = await driverOf(bmc.password).healthFindings();
    expect(findings.map((f) => `${f.kind} ${f.subject}`).sort()).toEqual([
      'sel-critical Memory #0x01 Uncorrectable ECC',
      'sel-critical Temperature #0x30 Upper Critical going high',
    ]);
  });
});
