import type { SiteConfig } from '#config/site-config.ts';
import type { SiteAgent } from '#services/context.ts';
import { createSiteAgentClient } from './agent-client.ts';

/** The reconcilers' view of the site agent, over HTTP with the create-retry rule of `[instance_create_retry]`. */
export function httpSiteAgent(baseUrl: string, config: SiteConfig): SiteAgent {
  const retry = config.instance_create_retry;
  const client = createSiteAgentClient({
    baseUrl,
    maxAttempts: retry.max_attempts,
    baseDelayMs: retry.base_delay_ms,
    timeoutMs: retry.timeout_ms,
  });
  return {
    async create(request) {
      const result = await client.createInstance(request);
      return result.ok
        ? { ok: true, siteName: result.siteName, attempts: result.attempts }
        : { ok: false, siteName: result.siteName, attempts: result.attempts, reason: result.reason };
    },
    async delete(name) {
      const result = await client.deleteInstance(name);
      if (!result.ok) return { kind: 'error', reason: result.reason };
      return result.alreadyGone ? { kind: 'gone' } : { kind: 'accepted' };
    },
    async status(name) {
      const result = await client.instanceStatus(name);
      return result.ok ? { kind: result.state } : { kind: 'error', reason: result.reason };
    },
  };
}
