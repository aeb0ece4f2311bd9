import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CliError } from './errors.ts';

// Where the CLI finds the API and its token: flags, then the environment, then a profile file
// (~/.config/fleetward/config.json, or the file named by FLEETWARD_CONFIG). An explicit --profile beats the
// environment, as with other cloud CLIs.

export interface Profile {
  url?: string;
  token?: string;
  /** The tenant org for instance and meta-instance commands; the token's `org` claim when absent. */
  org?: string;
}

export interface ConfigFile {
  defaultProfile?: string;
  profiles: Record<string, Profile>;
}

export interface ConnectionFlags {
  url?: string;
  token?: string;
  profile?: string;
}

export interface Connection {
  url: string;
  token?: string;
  org?: string;
  /** Where each value came from, for `fleetward profile show` and error messages. */
  source: { url: string; token: string };
}

/** The local runner's default address (`npm start`). */
export const defaultUrl = 'http://127.0.0.1:8080';

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.FLEETWARD_CONFIG) return env.FLEETWARD_CONFIG;
  const base = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'fleetward', 'config.json');
}

export function readConfig(path: string): ConfigFile {
  if (!existsSync(path)) return { profiles: {} };
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new CliError(`${path} is not valid JSON: ${(error as Error).message}`, 2);
  }
  const file = parsed as Partial<ConfigFile> | null;
  if (typeof file !== 'object' || file === null || (file.profiles !== undefined && typeof file.profiles !== 'object')) {
    throw new CliError(`${path} should hold { "defaultProfile"?: "name", "profiles": { "name": { "url", "token", "org"? } } }`, 2);
  }
  return { ...(file.defaultProfile ? { defaultProfile: file.defaultProfile } : {}), profiles: file.profiles ?? {} };
}

/** Written readable by the owner only: it holds tokens. */
export function writeConfig(path: string, config: ConfigFile): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
}

export function resolveConnection(flags: ConnectionFlags, env: NodeJS.ProcessEnv = process.env): Connection {
  const path = configPath(env);
  const explicitProfile = flags.profile ?? env.FLEETWARD_PROFILE;
  const config = readConfig(path);
  const profileName = explicitProfile ?? config.defaultProfile;
  const profile = profileName ? config.profiles[profileName] : undefined;
  if (explicitProfile && !profile) {
    const known = Object.keys(config.profiles);
    throw new CliError(`no profile "${explicitProfile}" in ${path}${known.length ? ` (known: ${known.join(', ')})` : ''}`, 2);
  }
  const fromProfile = (value: string | undefined) => (value ? { value, from: `profile ${profileName}` } : undefined);
  const fromEnv = (name: string) => (env[name] ? { value: env[name]!, from: `$${name}` } : undefined);
  const pick = (flag: string | undefined, flagName: string, envName: string, profileValue: string | undefined) => {
    if (flag) return { value: flag, from: flagName };
    return explicitProfile ? (fromProfile(profileValue) ?? fromEnv(envName)) : (fromEnv(envName) ?? fromProfile(profileValue));
  };
  const url = pick(flags.url, '--url', 'FLEETWARD_URL', profile?.url) ?? { value: defaultUrl, from: 'default' };
  const token = pick(flags.token, '--token', 'FLEETWARD_TOKEN', profile?.token);
  const org = env.FLEETWARD_ORG || profile?.org;
  return {
    url: url.value.replace(/\/+$/, ''),
    ...(token ? { token: token.value } : {}),
    ...(org ? { org } : {}),
    source: { url: url.from, token: token?.from ?? 'none' },
  };
}
