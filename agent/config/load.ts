// Reads and checks the config file at start: a problem is ONE line naming the key, so `fleetward-agent` can print it
// and exit 1 before it touches a BMC.

import { readFileSync } from 'node:fs';
import { parse as parseToml } from 'smol-toml';
import { parseSigningKeys } from '#site/signing-keys.ts';
import type { SigningKey } from '#site/request-signing.ts';
import { agentConfigSchema, type AgentConfig } from './schema.ts';
import { readSecret } from './secret-ref.ts';

export class AgentConfigError extends Error {}

export function parseAgentConfig(text: string, source: string): AgentConfig {
  let raw: unknown;
  try {
    raw = parseToml(text);
  } catch (error) {
    throw new AgentConfigError(`${source}: not TOML: ${(error as Error).message.split('\n')[0]}`);
  }
  const parsed = agentConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const more = parsed.error.issues.length > 1 ? ` (and ${parsed.error.issues.length - 1} more)` : '';
    throw new AgentConfigError(`${source}: ${issue.path.join('.') || '(top level)'}: ${issue.message}${more}`);
  }
  return parsed.data;
}

export function loadAgentConfig(path: string): AgentConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new AgentConfigError(`${path}: cannot read: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  return parseAgentConfig(text, path);
}

/** Every key the agent accepts a signed call with (a rotation holds two). Read at start and on SIGHUP. */
export function readSigningKeys(config: AgentConfig): SigningKey[] {
  const { signing } = config;
  try {
    if (signing.keys_file !== undefined) return [...parseSigningKeys(readSecret({ file: signing.keys_file }), signing.keys_file).keys];
    return (signing.keys ?? []).map((key) => {
      const secret = readSecret(key.secret);
      // The controller's rule for a secret (signing-keys.ts): a short one is refused here too, not found out at a 401.
      if (secret.length < 32) throw new Error(`key ${key.id}: a secret is at least 32 characters`);
      return { id: key.id, secret };
    });
  } catch (error) {
    throw new AgentConfigError(`signing: ${(error as Error).message}`);
  }
}
