import type { SiteConfig } from '#config/site-config.ts';
import type { SiteAgent } from '#runtime/context.ts';
import { createSiteAgentClient } from '#site/agent-client.ts';
import type { CreateOutcome as AttemptOutcome } from '#site/create-retry.ts';
import type { SigningKeySource } from '#site/signing-keys.ts';

/** A low-cardinality name for how an attempt ended (a metric dimension). */
const outcomeLabel = (outcome: AttemptOutcome): string => (outcome.kind === 'http-error' ? `http-${outcome.status}` : outcome.kind);

/**
 * The reconcilers' view of the site agent, over HTTP with the create-retry rule of `[instance_create_retry]`, every
 * call signed with `keys`.
 */
export function httpSiteAgent(baseUrl: string, config: SiteConfig, keys: SigningKeySource): SiteAgent {
  const retry = config.instance_create_retry;
  const client = createSiteAgentClient({
    baseUrl,
    keys,
    maxAttempts: retry.max_attempts,
    baseDelayMs: retry.base_delay_ms,
    timeoutMs: retry.timeout_ms,
  });
  return {
    async create(request, call) {
      const result = await client.createInstance(request, call);
      return result.ok
        ? { ok: true, siteName: result.siteName, attempts: result.attempts }
        : { ok: false, siteName: result.siteName, attempts: result.attempts, reason: result.reason, failedWith: outcomeLabel(result.lastOutcome) };
    },
    async delete(name, call) {
      const result = await client.deleteInstance(name, call);
      if (!result.ok) return { kind: 'error', reason: result.reason };
      return result.alreadyGone ? { kind: 'gone' } : { kind: 'accepted' };
    },
    async startMaintenance(machineId, request, call) {
      const result = await client.startMaintenance(machineId, request, call);
      if (result.ok) return { kind: 'accepted' };
      return result.refused ? { kind: 'refused', reason: result.reason } : { kind: 'error', reason: result.reason };
    },
    async status(name, call) {
      const result = await client.instanceStatus(name, call);
      return result.ok ? { kind: result.state } : { kind: 'error', reason: result.reason };
    },
    async power(name, request, call) {
      const result = await client.powerInstance(name, request, call);
      if (result.ok) return { kind: 'accepted' };
      return result.refused ? { kind: 'refused', reason: result.reason } : { kind: 'error', reason: result.reason };
    },
    async validate(machineId, request, call) {
      const result = await client.validateMachine(machineId, request, call);
      return result.ok ? { ok: true } : { ok: false, reason: result.reason };
    },
  };
}
