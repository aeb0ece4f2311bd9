// Redfish (DMTF): power by `ComputerSystem.Reset` with a reset type the system advertises, health from its log
// services. Every resource is reached by following `@odata.id` links from the service root, never by a path built
// here, since vendors name their members as they please.

import type { RedfishBmcConfig } from '../config/schema.ts';
import { readSecret } from '../config/secret-ref.ts';
import type { Finding } from '../probes/findings.ts';
import { BmcError, type BmcDriver, type PowerAction, type PowerState } from './driver.ts';
import { redfishErrorText, redfishHttp, type RedfishAnswer } from './redfish-http.ts';

type Resource = Record<string, unknown>;

const SERVICE_ROOT = '/redfish/v1';

/** Reset types to use for each action, best first; the first the system allows is sent. */
export const RESET_PREFERENCES: Readonly<Record<PowerAction, readonly string[]>> = {
  on: ['On', 'ForceOn'],
  off: ['ForceOff', 'GracefulShutdown'],
  cycle: ['PowerCycle', 'ForceRestart', 'GracefulRestart'],
};

const linkOf = (resource: Resource | undefined, ...keys: string[]): string | undefined => {
  let at: unknown = resource;
  for (const key of keys) at = (at as Resource | undefined)?.[key];
  const id = (at as Resource | undefined)?.['@odata.id'];
  return typeof id === 'string' ? id : undefined;
};

const membersOf = (collection: Resource): string[] =>
  ((collection.Members as Resource[] | undefined) ?? []).map((m) => m['@odata.id']).filter((id): id is string => typeof id === 'string');

export function redfishDriver(config: RedfishBmcConfig): BmcDriver {
  const send = redfishHttp({ baseUrl: config.url, timeoutMs: config.timeout_seconds * 1000, caFile: config.ca_file, tlsVerify: config.tls_verify });
  const where = `BMC ${config.url}`;
  let sessionToken: string | undefined;
  let systemPath = config.system;

  async function call(method: string, path: string, body?: unknown, retried = false): Promise<RedfishAnswer> {
    const headers: Record<string, string> = {};
    if (config.auth === 'basic') headers.authorization = `Basic ${Buffer.from(`${config.user}:${readSecret(config.password)}`).toString('base64')}`;
    else headers['x-auth-token'] = sessionToken ?? (await logIn());
    let answer: RedfishAnswer;
    try {
      answer = await send(method, path, headers, body);
    } catch (error) {
      throw new BmcError(`${where}: ${method} ${path}: ${(error as Error).message}`);
    }
    // A session the BMC forgot (it restarted, or it expired): log in again once.
    if (answer.status === 401 && config.auth === 'session' && !retried) {
      sessionToken = undefined;
      return call(method, path, body, true);
    }
    if (answer.status >= 400) throw new BmcError(`${where}: ${method} ${path} answered ${redfishErrorText(answer)}`);
    return answer;
  }

  async function get(path: string): Promise<Resource> {
    return ((await call('GET', path)).body ?? {}) as Resource;
  }

  async function logIn(): Promise<string> {
    let root: RedfishAnswer;
    try {
      // The service root is readable without credentials; it says where sessions are made.
      root = await send('GET', SERVICE_ROOT, {});
    } catch (error) {
      throw new BmcError(`${where}: GET ${SERVICE_ROOT}: ${(error as Error).message}`);
    }
    const sessions = linkOf(root.body as Resource, 'Links', 'Sessions');
    if (!sessions) throw new BmcError(`${where}: the service root links no Sessions collection (set auth = "basic")`);
    const answer = await send('POST', sessions, {}, { UserName: config.user, Password: readSecret(config.password) }).catch((error: Error) => {
      throw new BmcError(`${where}: POST ${sessions}: ${error.message}`);
    });
    const token = answer.headers['x-auth-token'];
    if (answer.status >= 400 || typeof token !== 'string') throw new BmcError(`${where}: log-in refused: ${redfishErrorText(answer)}`);
    sessionToken = token;
    return token;
  }

  async function system(): Promise<Resource> {
    if (!systemPath) {
      const systems = linkOf(await get(SERVICE_ROOT), 'Systems');
      if (!systems) throw new BmcError(`${where}: the service root links no Systems collection`);
      const members = membersOf(await get(systems));
      if (members.length !== 1) throw new BmcError(`${where}: ${members.length} systems; name one with bmc.system`);
      systemPath = members[0]!;
    }
    return get(systemPath);
  }

  async function powerState(): Promise<PowerState> {
    const state = (await system()).PowerState;
    // PoweringOn counts as on and PoweringOff as off: what the machine is heading for.
    if (state === 'On' || state === 'PoweringOn') return 'on';
    if (state === 'Off' || state === 'PoweringOff') return 'off';
    throw new BmcError(`${where}: unexpected PowerState ${JSON.stringify(state)}`);
  }

  return {
    kind: 'redfish',
    powerState,
    async power(action) {
      const found = await system();
      const reset = (found.Actions as Resource | undefined)?.['#ComputerSystem.Reset'] as Resource | undefined;
      const target = reset?.target;
      if (typeof target !== 'string') throw new BmcError(`${where}: the system offers no ComputerSystem.Reset action`);
      const allowed = reset?.['ResetType@Redfish.AllowableValues'];
      const allows = (type: string) => !Array.isArray(allowed) || allowed.includes(type);
      const isOn = found.PowerState === 'On' || found.PowerState === 'PoweringOn';
      if (action === 'cycle' && !isOn) return void (await sendReset(target, pick('on', allows)));
      const type = RESET_PREFERENCES[action].find(allows);
      if (type) return void (await sendReset(target, type));
      // A system that offers no restart is cycled by hand: off, then on.
      if (action === 'cycle') {
        await sendReset(target, pick('off', allows));
        await sendReset(target, pick('on', allows));
        return;
      }
      throw new BmcError(`${where}: the system allows none of ${RESET_PREFERENCES[action].join(', ')} (it allows ${JSON.stringify(allowed)})`);
    },
    async healthFindings() {
      const found = await system();
      return [...(await logFindings(found)), ...(await sensorFindings(found))];
    },
  };

  function pick(action: 'on' | 'off', allows: (type: string) => boolean): string {
    const type = RESET_PREFERENCES[action].find(allows);
    if (!type) throw new BmcError(`${where}: the system allows none of ${RESET_PREFERENCES[action].join(', ')}`);
    return type;
  }

  async function sendReset(target: string, resetType: string): Promise<void> {
    await call('POST', target, { ResetType: resetType });
  }

  /** A resource a collection lists: expanded in place, or only its link (the BMC's choice), followed then. */
  async function member(entry: Resource, needs: string): Promise<Resource> {
    return entry[needs] === undefined && typeof entry['@odata.id'] === 'string' ? get(entry['@odata.id']) : entry;
  }

  /** The sensors of the system's chassis whose health is Critical or Warning (past a threshold, as the BMC judges). */
  async function sensorFindings(found: Resource): Promise<Finding[]> {
    const findings: Finding[] = [];
    const chassisLinks = ((found.Links as Resource | undefined)?.Chassis as Resource[] | undefined) ?? [];
    for (const chassisLink of chassisLinks) {
      if (typeof chassisLink['@odata.id'] !== 'string') continue;
      const sensors = linkOf(await get(chassisLink['@odata.id']), 'Sensors');
      if (!sensors) continue;
      for (const entry of (await get(sensors)).Members as Resource[]) {
        const sensor = await member(entry, 'Status');
        const health = (sensor.Status as Resource | undefined)?.Health;
        if (health !== 'Critical' && health !== 'Warning') continue;
        const name = String(sensor.Name ?? sensor.Id);
        const reading = sensor.Reading === undefined ? '' : ` (${sensor.Reading} ${sensor.ReadingUnits ?? ''})`.replace(' )', ')');
        findings.push({
          kind: health === 'Critical' ? 'sensor-critical' : 'sensor-warning',
          subject: name,
          message: `${where}: sensor ${name} is ${health}${reading}`,
        });
      }
    }
    return findings;
  }

  /** Critical and warning entries of the system's log services (the SEL, mostly). */
  async function logFindings(found: Resource): Promise<Finding[]> {
    const services = linkOf(found, 'LogServices');
    if (!services) return [];
    const findings: Finding[] = [];
    for (const servicePath of membersOf(await get(services))) {
      const entriesPath = linkOf(await get(servicePath), 'Entries');
      if (!entriesPath) continue;
      const entries = await get(entriesPath);
      for (const entry of (entries.Members as Resource[] | undefined) ?? []) {
        const full = await member(entry, 'Severity');
        const severity = full.Severity;
        if (severity !== 'Critical' && severity !== 'Warning') continue;
        const words = [full.SensorType, full.EntryCode, full.Message].filter((w) => typeof w === 'string').join(': ');
        findings.push({
          kind: severity === 'Critical' ? 'sel-critical' : 'sel-warning',
          subject: String(full.Id ?? full['@odata.id']),
          message: `${where}: ${words}`,
        });
      }
    }
    return findings;
  }
}
