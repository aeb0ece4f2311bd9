import { InvalidArgumentError, type Command } from 'commander';
import type { Body } from '#client/api.ts';
import { resolveConnection, type Connection } from './config.ts';
import { CliError } from './errors.ts';
import { createClient, noToken, tokenClaims, type Client } from './http.ts';
import { chosenFormat, Output, type Format, type Streams } from './output.ts';

// What a command's action needs: the output, the API client and who the caller is. Built from the global
// options (`--url`, `--token`, `--profile`, `--format`/`--output`) when the action runs.

export interface GlobalOptions {
  url?: string;
  token?: string;
  profile?: string;
  format?: Format;
  output?: Format;
}

export interface Runtime {
  out: Output;
  client: Client;
  connection: Connection;
  /** The tenant org: `--org`, then FLEETWARD_ORG or the profile's org, then the token's `org` claim. */
  org(flag?: string): string;
  /** Whether the token carries the provider-admin role (machine commands then use the /admin routes). */
  isProviderAdmin(): boolean;
}

export interface RuntimeDeps {
  streams?: Streams;
  env?: NodeJS.ProcessEnv;
}

export function runtimeFor(command: Command, deps: RuntimeDeps = {}): Runtime {
  const options = command.optsWithGlobals<GlobalOptions>();
  const out = new Output(chosenFormat(options), deps.streams);
  const connection = resolveConnection({ url: options.url, token: options.token, profile: options.profile }, deps.env ?? process.env);
  const claims = tokenClaims(connection.token);
  return {
    out,
    client: createClient(connection),
    connection,
    org(flag) {
      const org = flag ?? connection.org ?? claims?.org;
      if (!org && !connection.token) throw new CliError(noToken, 2);
      if (!org) throw new CliError('which org? give --org, set FLEETWARD_ORG, or use a token with an org claim', 2);
      return org;
    },
    isProviderAdmin: () => claims?.roles.includes('provider-admin') ?? false,
  };
}

// ---- option parsers --------------------------------------------------------------------------------------

export function parseBoolean(value: string): boolean {
  if (/^(true|yes|on|1)$/i.test(value)) return true;
  if (/^(false|no|off|0)$/i.test(value)) return false;
  throw new InvalidArgumentError('expected true or false');
}

export function parsePositiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive whole number');
  return n;
}

export function parseCount(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number (0 or more)');
  return n;
}

export function parseSeconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a number of seconds');
  return n;
}

/** `k=v` into a record; repeated options accumulate. */
export function collectLabel(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const eq = value.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError(`expected key=value, got "${value}"`);
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}

export const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** The issue flags shared by `instance release` and `instance online-repair enable`. */
export interface IssueFlags {
  issueCategory?: string;
  summary?: string;
  details?: string;
}

/** The issue of a release (and of online repair), as the document types it: after the API normalised it. */
type Issue = NonNullable<Body<'/v2/org/{org}/nico/instance/{id}', 'delete'>['machineHealthIssue']>;

/**
 * An issue when any of its flags is given. Sent as typed, unchecked: the API judges it (any letter case for the
 * category; a summary without a category is its 422), so the CLI must not pre-empt it.
 */
export function issueFrom(flags: IssueFlags): Issue | undefined {
  if (flags.issueCategory === undefined && flags.summary === undefined && flags.details === undefined) return undefined;
  return {
    ...(flags.issueCategory !== undefined ? { category: flags.issueCategory } : {}),
    ...(flags.summary !== undefined ? { summary: flags.summary } : {}),
    ...(flags.details !== undefined ? { details: flags.details } : {}),
  } as Issue;
}

export function addIssueOptions(command: Command): Command {
  return command
    .option('--issue-category <category>', 'HARDWARE, NETWORK, PERFORMANCE or OTHER (any letter case)')
    .option('--summary <text>', 'what went wrong (1..1024 characters)')
    .option('--details <text>', 'more about it (up to 8192 characters)');
}

export function addWaitOptions(command: Command, what: string, defaultSeconds = 300): Command {
  return command
    .option('--wait', `wait until ${what}, showing progress on stderr`)
    .option('--timeout <seconds>', 'how long --wait waits', parseSeconds, defaultSeconds);
}

/**
 * A commander action with its runtime: `fn(rt, args, options)`. Errors propagate to main(), which prints them
 * and sets the exit code.
 */
// biome-ignore lint/suspicious/noExplicitAny: commander passes the positional arguments each command declares; actions destructure them by name
export function action<O = unknown>(deps: RuntimeDeps, fn: (rt: Runtime, args: any[], options: O) => Promise<void>) {
  return async (...received: unknown[]): Promise<void> => {
    const command = received.at(-1) as Command;
    // With the global options: `profile set` stores --url and --token.
    await fn(runtimeFor(command, deps), received.slice(0, -2), command.optsWithGlobals<O & object>() as O);
  };
}
