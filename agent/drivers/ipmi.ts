// IPMI over LAN (RMCP+, `ipmitool -I lanplus`): chassis power and the BMC's SEL and sensor thresholds. The password
// travels in ipmitool's environment (-E), never on its command line where `ps` would show it.

import type { IpmiBmcConfig } from '../config/schema.ts';
import { readSecret } from '../config/secret-ref.ts';
import { lastLines, runCommand } from '../operations/run-command.ts';
import type { Finding } from '../probes/findings.ts';
import { parseSdrElist, parseSelElist } from '../probes/ipmi-sel.ts';
import { BmcError, type BmcDriver, type PowerAction, type PowerState } from './driver.ts';

export function ipmiDriver(config: IpmiBmcConfig, ipmitool = 'ipmitool'): BmcDriver {
  const timeoutMs = config.timeout_seconds * 1000;

  async function ipmitoolSays(...command: string[]): Promise<string> {
    // ipmitool's own timeout per try (-N) and one retry (-R) fit within ours, so its error, not ours, is what we report.
    const perTry = Math.max(1, Math.floor(config.timeout_seconds / 2));
    const argv = [ipmitool, '-I', 'lanplus', '-H', config.host, '-p', String(config.port), '-U', config.user, '-E', '-C', String(config.cipher_suite)];
    const outcome = await runCommand({
      argv: [...argv, '-N', String(perTry), '-R', '1', ...command],
      env: { IPMI_PASSWORD: readSecret(config.password) },
      timeoutMs: timeoutMs + 2_000,
    });
    const where = `BMC ${config.host}:${config.port}`;
    if (outcome.spawnError) throw new BmcError(`${where}: ipmitool could not start: ${outcome.spawnError}`);
    if (outcome.timedOut) throw new BmcError(`${where}: no answer within ${config.timeout_seconds} s to "${command.join(' ')}"`);
    if (outcome.code !== 0) throw new BmcError(`${where}: "${command.join(' ')}" failed: ${lastLines(outcome, 3) || `exit ${outcome.code}`}`);
    return outcome.stdout;
  }

  async function powerState(): Promise<PowerState> {
    const said = await ipmitoolSays('chassis', 'power', 'status');
    const state = /Chassis Power is (on|off)/i.exec(said)?.[1]?.toLowerCase();
    if (state !== 'on' && state !== 'off') throw new BmcError(`BMC ${config.host}:${config.port}: unexpected power status: ${said.trim()}`);
    return state;
  }

  return {
    kind: 'ipmi',
    powerState,
    async power(action: PowerAction) {
      // A cycle of a machine that is off has no effect on many BMCs (IPMI leaves it to them): power it on instead.
      const command = action === 'cycle' && (await powerState()) === 'off' ? 'on' : action;
      await ipmitoolSays('chassis', 'power', command);
    },
    async healthFindings(): Promise<Finding[]> {
      const sel = parseSelElist(await ipmitoolSays('sel', 'elist'));
      // A BMC without sensor records answers `sdr elist` with an error: its SEL still counts.
      const sdr = await ipmitoolSays('sdr', 'elist').then(parseSdrElist, () => []);
      return [...sel, ...sdr];
    },
  };
}
