import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSiteApp } from '#lib/app.ts';
import { defaultSitesDir } from '#lib/site.ts';
import type { SiteStack } from '#lib/site-stack.ts';
import cdkJson from '../../cdk.json' with { type: 'json' };

// The dashboard switched off: the sample real site with `[dashboard] enabled = false`, synthesized once (bundling
// skipped). The dashboard itself (enabled by default) is checked in site-stack-dashboard.test.ts.
const SITE = 'example-aws';
let scratch: string;
let stack: SiteStack;
let template: Template;
let violations: string[] = [];
let acknowledged: string[] = [];

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'fleetward-dashboard-'));
  const outdir = join(scratch, 'out');
  const toml = readFileSync(join(defaultSitesDir, `${SITE}.toml`), 'utf8');
  expect(toml).not.toMatch(/^\[dashboard\]/m);
  writeFileSync(join(scratch, `${SITE}.toml`), `${toml}\n[dashboard]\nenabled = false\n`);
  const built = buildSiteApp({
    site: SITE,
    sitesDir: scratch,
    appProps: { outdir, context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } },
  });
  stack = built.stack;
  built.app.synth();
  template = Template.fromJSON(JSON.parse(readFileSync(join(outdir, `${stack.artifactId}.template.json`), 'utf8')));
  const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as {
    pluginReports: Array<{ violations: Array<{ ruleName: string }> }>;
  };
  violations = report.pluginReports.flatMap((plugin) => plugin.violations.map((v) => v.ruleName));
  acknowledged = built.app.node
    .findAll()
    .flatMap((construct) =>
      construct.node.metadata
        .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
        .flatMap((entry) => Object.keys(entry.data as Record<string, string>).map((id) => `${id} at ${construct.node.path}`)),
    );
}, 120_000);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('[dashboard] enabled = false', () => {
  it('is read from the site file', () => {
    expect(stack.site.config.dashboard).toEqual({ enabled: false });
    expect(stack.dashboard).toBeUndefined();
  });

  it('leaves out the bucket, the distribution, the file deployment and its function', () => {
    for (const type of [
      'AWS::S3::Bucket',
      'AWS::S3::BucketPolicy',
      'AWS::CloudFront::Distribution',
      'AWS::CloudFront::OriginAccessControl',
      'AWS::CloudFront::ResponseHeadersPolicy',
      'Custom::CDKBucketDeployment',
      'AWS::Lambda::LayerVersion',
    ]) {
      template.resourceCountIs(type, 0);
    }
    for (const [id, fn] of Object.entries(template.findResources('AWS::Lambda::Function'))) {
      expect((fn as { Properties: { Runtime: string } }).Properties.Runtime, id).toBe('nodejs22.x');
    }
  });

  it('configures no CORS on the HTTP API and outputs no dashboard URL', () => {
    const [api] = Object.values(template.findResources('AWS::ApiGatewayV2::Api')) as Array<{ Properties: Record<string, unknown> }>;
    expect(api!.Properties.CorsConfiguration).toBeUndefined();
    expect(Object.keys(template.findOutputs('*'))).not.toContain('DashboardUrl');
    expect(Object.keys(template.findOutputs('*'))).toContain('ApiUrl');
  });

  it("passes cdk-nag without the dashboard's acknowledgments", () => {
    expect(violations).toEqual([]);
    expect(acknowledged.filter((ack) => /CFR|Dashboard|CDKBucketDeployment/.test(ack))).toEqual([]);
  });
});
