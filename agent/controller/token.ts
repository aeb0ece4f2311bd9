// Where the agent gets its bearer token (role `site-agent`) for its calls to the controller: a file or variable a
// site's identity tooling keeps fresh, a command that prints one, or, on the local runner only, its dev issuer.

import type { TokenSourceConfig } from '../config/schema.ts';
import { readSecret } from '../config/secret-ref.ts';
import { describeOutcome, runCommand } from '../operations/run-command.ts';

export type TokenSource = () => Promise<string>;

export function tokenSource(config: TokenSourceConfig, controllerUrl: string): TokenSource {
  // A file or variable is read on every call: whatever rotates it needs no signal to the agent.
  if ('env' in config || 'file' in config) return async () => readSecret(config).trim();
  if ('command' in config) {
    let kept: { token: string; until: number } | undefined;
    return async () => {
      if (kept && kept.until > Date.now()) return kept.token;
      const timeoutMs = 30_000;
      const outcome = await runCommand({ shell: config.command, timeoutMs });
      const token = outcome.stdout.trim();
      if (outcome.code !== 0 || token === '') throw new Error(describeOutcome('the token command', outcome, timeoutMs));
      kept = { token, until: Date.now() + config.cache_seconds * 1000 };
      return token;
    };
  }
  // Asked again every minute: far within the dev issuer's token lifetime, and not a call per heartbeat.
  let kept: { token: string; until: number } | undefined;
  return async () => {
    if (kept && kept.until > Date.now()) return kept.token;
    const response = await fetch(new URL('/_local/token', controllerUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sub: 'site-agent', org: 'site', roles: ['site-agent'] }),
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) throw new Error(`the local runner's issuer answered ${response.status}`);
    kept = { token: ((await response.json()) as { token: string }).token, until: Date.now() + 60_000 };
    return kept.token;
  };
}
