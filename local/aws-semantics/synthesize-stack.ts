import { App } from 'aws-cdk-lib';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SiteConfig } from '#config/site-config.ts';
import { SiteStack, stackNameOf } from '#lib/site-stack.ts';
import type { StackTemplate } from './stack-settings.ts';

/**
 * The CloudFormation template `cdk synth` would make for a site running `config`, without bundling the functions and
 * without the cdk-nag checks (the CDK tests run those): only what the stack says matters here. Loaded on demand, as
 * CDK takes over a second to import.
 */
export function synthesizeTemplate(config: SiteConfig): StackTemplate {
  const outdir = mkdtempSync(join(tmpdir(), 'fleetward-local-synth-'));
  try {
    const app = new App({ outdir, context: { 'aws:cdk:bundling-stacks': [] } });
    const site = {
      name: config.site.name,
      file: '(the local runner)',
      config,
      isLocalSample: true,
      agentUrl: config.site.agent_url,
      signingSecretArn: config.site_agent.signing_secret_arn,
    };
    const stack = new SiteStack(app, stackNameOf(site.name), { site });
    return app.synth().getStackByName(stack.stackName).template as StackTemplate;
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}
