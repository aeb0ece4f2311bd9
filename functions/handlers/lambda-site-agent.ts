import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { SiteConfig } from '#config/site-config.ts';
import { secretsManagerKeys } from '#site/secrets-manager-keys.ts';
import { httpSiteAgent } from '#runtime/site-agent.ts';
import type { SiteAgent } from '#runtime/context.ts';
import { sharedTracer } from '#handlers/lambda-context.ts';

/**
 * The site agent of a deployed function that calls it (the stream and sweep handlers pass this to contextFromEnv):
 * its URL and the Secrets Manager secret of its signing keys, both set by the stack.
 */
export function signedSiteAgent(env: NodeJS.ProcessEnv, config: SiteConfig): SiteAgent {
  const agentUrl = env.SITE_AGENT_URL ?? config.site.agent_url;
  if (!agentUrl) throw new Error('SITE_AGENT_URL (or [site] agent_url) must be set');
  const secretArn = env.SITE_AGENT_SIGNING_SECRET_ARN ?? config.site_agent.signing_secret_arn;
  if (!secretArn) throw new Error('SITE_AGENT_SIGNING_SECRET_ARN (or [site_agent] signing_secret_arn) must be set');
  return httpSiteAgent(
    agentUrl,
    config,
    secretsManagerKeys(secretArn, () => sharedTracer.captureAWSv3Client(new SecretsManagerClient({}))),
  );
}
