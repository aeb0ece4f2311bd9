import { App } from 'aws-cdk-lib';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SiteConfig } from '#config/site-config.ts';
import { FUNCTION_NAMES, type FunctionName } from '#lib/lambda-functions.ts';
import { SiteStack, stackNameOf } from '#lib/site-stack.ts';
import type { StreamMappingSettings } from '#lib/stream-mapping.ts';

// What the local runner takes as given from lib/ (the stream's event source mapping, each function's timeout), read
// back from a synthesized template, so a test can hold the two equal.

export interface StackTemplate {
  Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
}

export interface StackSettings {
  streamMapping: StreamMappingSettings;
  /** Each function's Timeout, in seconds. */
  functionTimeoutSeconds: Record<FunctionName, number>;
}

/** The settings in `template`; throws when it lacks what a site's stack always has. */
export function stackSettingsOf(template: StackTemplate): StackSettings {
  const resources = Object.entries(template.Resources);
  const functionIdOf = (name: FunctionName): string => {
    const pattern = new RegExp(`^${name}Function[0-9A-F]{8}$`);
    const found = resources.find(([id, resource]) => resource.Type === 'AWS::Lambda::Function' && pattern.test(id));
    if (!found) throw new Error(`the template has no function ${name}`);
    return found[0];
  };
  const functionTimeoutSeconds = Object.fromEntries(
    FUNCTION_NAMES.map((name) => [name, Number(template.Resources[functionIdOf(name)]!.Properties?.Timeout ?? 3)]),
  ) as Record<FunctionName, number>;
  const streamFunctionId = functionIdOf('StreamHandler');
  const mapping = resources
    .map(([, resource]) => resource)
    .find(
      (resource) => resource.Type === 'AWS::Lambda::EventSourceMapping' && (resource.Properties?.FunctionName as { Ref?: string })?.Ref === streamFunctionId,
    );
  if (!mapping?.Properties) throw new Error('the template has no event source mapping for the stream function');
  const p = mapping.Properties;
  const filters = ((p.FilterCriteria as { Filters?: Array<{ Pattern: string }> } | undefined)?.Filters ?? []).map((filter) => filter.Pattern);
  return {
    // Lambda's defaults for a DynamoDB stream where the template says nothing.
    streamMapping: {
      filterPatterns: filters,
      batchSize: Number(p.BatchSize ?? 100),
      maximumRetryAttempts: Number(p.MaximumRetryAttempts ?? -1),
      maximumRecordAgeSeconds: Number(p.MaximumRecordAgeInSeconds ?? -1),
      bisectBatchOnFunctionError: Boolean(p.BisectBatchOnFunctionError ?? false),
      parallelizationFactor: Number(p.ParallelizationFactor ?? 1),
    },
    functionTimeoutSeconds,
  };
}

/**
 * The CloudFormation template `cdk synth` would make for a site running `config`, without bundling the functions and
 * without the cdk-nag checks (the CDK tests run those): only what the stack says matters here.
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
