import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BmcError } from '#agent/drivers/driver.ts';
import { redfishDriver } from '#agent/drivers/redfish.ts';
import { startRedfishMockup, type RedfishMockup } from './support/redfish-mockup-server.ts';

const SYSTEM = '/redfish/v1/Systems/GB200-01';

describe('the Redfish driver against a mockup service', () => {
  let bmc: RedfishMockup;
  const driverOf = (password: string, auth: 'session' | 'basic' = 'session', system?: string) => {
    process.env.AGENT_TEST_REDFISH_PASSWORD = password;
    return redfishDriver({
      driver: 'redfish',
      url: bmc.url,
      ...(system ? { system } : {}),
      user: 'root',
      password: { env: 'AGENT_TEST_REDFISH_PASSWORD' },
      auth,
      tls_verify: true,
      timeout_seconds: 5,
    });
  };

  beforeAll(async () => {
    bmc = await startRedfishMockup({ dir: join(import.meta.dirname, 'fixtures', 'redfish-mockup'), user: 'root', password: 'calvin' });
  });
  afterAll(() => bmc?.stop());

  it('finds the one system by following @odata.id links, and sends the reset types it allows', async () => {
    const driver = driverOf('calvin');
    expect(await driver.powerState()).toBe('on');
    await driver.power('off');
    expect(await driver.powerState()).toBe('off');
    // Off, a cycle is an On; on, the system offers no PowerCycle, so ForceRestart.
    await driver.power('cycle');
    await driver.power('cycle');
    expect(bmc.resets.map((r) => r.resetType)).toEqual(['ForceOff', 'On', 'ForceRestart']);
    expect(bmc.resets.every((r) => r.system === SYSTEM)).toBe(true);
  });

  it('works with basic auth and a system named in the config', async () => {
    const driver = driverOf('calvin', 'basic', SYSTEM);
    await driver.power('on');
    expect(bmc.powerStateOf(SYSTEM)).toBe('On');
  });

  it('refused credentials fail with the BMC’s own message', async () => {
    for (const auth of ['session', 'basic'] as const) {
      const error = await driverOf('wrong', auth)
        .power('on')
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BmcError);
      expect((error as Error).message).toContain(auth === 'session' ? 'Invalid username or password' : 'The request requires authentication');
    }
  });

  it('reads critical SEL entries from the log services and sensors the BMC judges critical, by the system’s chassis', async () => {
    const findings = await driverOf('calvin').healthFindings();
    expect(findings).toEqual([
      {
        kind: 'sel-critical',
        subject: '1',
        message: `BMC ${bmc.url}: Temperature: Upper Critical - going high: GPU 3 temperature above its critical threshold`,
      },
      { kind: 'sensor-critical', subject: 'GPU 3 temperature', message: `BMC ${bmc.url}: sensor GPU 3 temperature is Critical (97 Cel)` },
    ]);
  });

  it('a BMC that is not there fails, never succeeds', async () => {
    const url = bmc.url;
    await bmc.stop();
    const error = await driverOf('calvin')
      .powerState()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BmcError);
    expect((error as Error).message).toContain(`BMC ${url}`);
    bmc = await startRedfishMockup({ dir: join(import.meta.dirname, 'fixtures', 'redfish-mockup'), user: 'root', password: 'calvin' });
  });
});
