import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRouteSpecs } from '#lib/api-routes.ts';
import { dashboardVendorFiles } from '#lib/dashboard-vendor.ts';
import type { SiteStack } from '#lib/site-stack.ts';
import { synthesizeSite, type SynthesizedSite } from '#test/support/synthesized-site.ts';

// The dashboard the stack deploys (S3, CloudFront, the files and their config), on one synthesis of the sample real
// site, bundling skipped (test/support/synthesized-site.ts). Switched off, it is checked in dashboard.test.ts.
const SITE = 'example-aws';
let synthesized: SynthesizedSite;
let outdir: string;
let stack: SiteStack;
let template: Template;

beforeAll(() => {
  synthesized = synthesizeSite(SITE);
  ({ outdir, stack, template } = synthesized);
}, 120_000);

afterAll(() => synthesized?.remove());

const resourcesOf = (type: string) => Object.entries(template.findResources(type)) as Array<[string, { Properties: any }]>;
const logicalIdOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);

describe('dashboard', () => {
  const dashboard = () => stack.dashboard!;
  const resourceOf = (construct: { node: { defaultChild?: unknown } }) => template.toJSON().Resources[logicalIdOf(construct)];
  const bucketPolicyOf = (bucketId: string) =>
    resourcesOf('AWS::S3::BucketPolicy').find(([, p]) => p.Properties.Bucket.Ref === bucketId)?.[1].Properties.PolicyDocument.Statement as any[];
  const distribution = () => resourceOf(dashboard().distribution).Properties.DistributionConfig;
  const deployment = () => {
    const found = resourcesOf('Custom::CDKBucketDeployment');
    expect(found).toHaveLength(1);
    return found[0]![1].Properties;
  };
  /** The staged directory of a deployment source, from its object key `<asset hash>.zip`. */
  const sourceDir = (index: number) => join(outdir, `asset.${(deployment().SourceObjectKeys[index] as string).replace(/\.zip$/, '')}`);

  it('is on by default ([dashboard] enabled = true)', () => {
    expect(stack.site.config.dashboard.enabled).toBe(true);
    expect(stack.dashboard).toBeDefined();
  });

  it('keeps the files in a private bucket that enforces SSL and logs its access', () => {
    const bucketId = logicalIdOf(dashboard().bucket);
    const logsId = logicalIdOf(dashboard().logBucket);
    for (const id of [bucketId, logsId]) {
      const bucket = template.toJSON().Resources[id];
      expect(bucket.Properties.PublicAccessBlockConfiguration, id).toEqual({
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      });
      expect(bucket.DeletionPolicy, id).toBe('Retain');
      expect(bucketPolicyOf(id), id).toContainEqual(
        expect.objectContaining({ Effect: 'Deny', Action: 's3:*', Principal: { AWS: '*' }, Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
      );
    }
    expect(resourceOf(dashboard().bucket).Properties.LoggingConfiguration).toEqual({ DestinationBucketName: { Ref: logsId }, LogFilePrefix: 'bucket/' });
    // Nothing else in the stack is a bucket, and no object is readable by anyone but CloudFront (below).
    expect(
      resourcesOf('AWS::S3::Bucket')
        .map(([id]) => id)
        .sort(),
    ).toEqual([bucketId, logsId].sort());
    for (const statement of bucketPolicyOf(bucketId).filter((st) => st.Effect === 'Allow')) {
      expect(statement.Principal).toEqual({ Service: 'cloudfront.amazonaws.com' });
    }
  });

  it('serves the bucket through CloudFront with Origin Access Control, index.html at /, HTTPS only', () => {
    const config = distribution();
    expect(config.DefaultRootObject).toBe('index.html');
    expect(config.DefaultCacheBehavior.ViewerProtocolPolicy).toBe('redirect-to-https');
    expect(config.DefaultCacheBehavior.AllowedMethods).toEqual(['GET', 'HEAD']);
    expect(config.Origins).toHaveLength(1);
    const [origin] = config.Origins;
    expect(origin.DomainName).toEqual({ 'Fn::GetAtt': [logicalIdOf(dashboard().bucket), 'RegionalDomainName'] });
    expect(origin.S3OriginConfig.OriginAccessIdentity).toBe('');
    const [oacId] = origin.OriginAccessControlId['Fn::GetAtt'];
    expect(template.toJSON().Resources[oacId].Properties.OriginAccessControlConfig).toMatchObject({
      OriginAccessControlOriginType: 's3',
      SigningBehavior: 'always',
      SigningProtocol: 'sigv4',
    });
    // Only this distribution may read the objects.
    const distributionId = logicalIdOf(dashboard().distribution);
    const allow = bucketPolicyOf(logicalIdOf(dashboard().bucket)).filter((st) => st.Effect === 'Allow');
    expect(allow).toHaveLength(1);
    expect(allow[0].Action).toBe('s3:GetObject');
    expect(JSON.stringify(allow[0].Condition)).toContain(JSON.stringify({ Ref: distributionId }));
    expect(config.Logging).toEqual({ Bucket: { 'Fn::GetAtt': [logicalIdOf(dashboard().logBucket), 'RegionalDomainName'] }, Prefix: 'cloudfront/' });
  });

  it("sends the local runner's security headers, with the region's API Gateway hosts allowed to connect", () => {
    const policyId = distribution().DefaultCacheBehavior.ResponseHeadersPolicyId.Ref;
    const headers = template.toJSON().Resources[policyId].Properties.ResponseHeadersPolicyConfig.SecurityHeadersConfig;
    const csp = JSON.stringify(headers.ContentSecurityPolicy.ContentSecurityPolicy);
    expect(csp).toContain("default-src 'self'; connect-src 'self' https://*.execute-api.");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(headers.ContentTypeOptions.Override).toBe(true);
    expect(headers.FrameOptions.FrameOption).toBe('DENY');
  });

  it('deploys web/ with a config.json naming this API, uncached', () => {
    const props = deployment();
    expect(props.DestinationBucketName).toEqual({ Ref: logicalIdOf(dashboard().bucket) });
    expect(props.SystemMetadata).toEqual({ 'cache-control': 'no-cache' });
    expect(props.SourceObjectKeys).toHaveLength(2 + Object.keys(dashboardVendorFiles).length);
    // Source 0: web/ as it is, minus the local runner's config.json and the type declarations.
    const files = readdirSync(sourceDir(0)).sort();
    expect(files).toEqual(expect.arrayContaining(['index.html', 'app.js', 'api.js', 'dom.js', 'fleet.js', 'poll.js', 'store.js', 'style.css', 'panels']));
    expect(readdirSync(join(sourceDir(0), 'panels'))).toEqual(expect.arrayContaining(['pipeline.js', 'rack-map.js', 'repair-stats.js']));
    expect(files).not.toContain('config.json');
    expect(existsSync(join(sourceDir(0), 'vendor', 'uplot.esm.d.ts'))).toBe(false);
    // Then the browser files from node_modules, under vendor/, byte for byte.
    Object.entries(dashboardVendorFiles).forEach(([key, file], i) => {
      expect(readFileSync(join(sourceDir(2 + i), key), 'utf8')).toBe(readFileSync(file, 'utf8'));
    });
    // Source 1: config.json, whose markers CloudFormation fills in with the API's URL.
    expect(readdirSync(sourceDir(1))).toEqual(['config.json']);
    const written = JSON.parse(readFileSync(join(sourceDir(1), 'config.json'), 'utf8')) as { apiUrl: string };
    expect(Object.keys(written)).toEqual(['apiUrl']);
    const markers = props.SourceMarkers[1] as Record<string, unknown>;
    const parts = written.apiUrl
      .split(/(<<marker:0xbaba:\d+>>)/)
      .filter(Boolean)
      .map((part) => markers[part] ?? part);
    expect(parts).toEqual(stack.resolve(stack.stage.url)['Fn::Join'][1]);
  });

  it('is read by web/api.js: the API base URL comes from config.json next to index.html', () => {
    const api = readFileSync(join(import.meta.dirname, '..', '..', 'web', 'api.js'), 'utf8');
    expect(api).toMatch(/fetch\('config\.json'/);
    expect(api).toMatch(/config\.apiUrl/);
    expect(existsSync(join(import.meta.dirname, '..', '..', 'web', 'index.html'))).toBe(true);
  });

  it("lets the dashboard's origin, and only it, call the API cross-origin with every method the routes use", () => {
    const cors = template.toJSON().Resources[logicalIdOf(stack.httpApi)].Properties.CorsConfiguration;
    expect(cors.AllowOrigins).toEqual([stack.resolve(dashboard().origin)]);
    expect(cors.AllowOrigins).toEqual([{ 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [logicalIdOf(dashboard().distribution), 'DomainName'] }]] }]);
    expect(cors.AllowHeaders.map((h: string) => h.toLowerCase()).sort()).toEqual(['authorization', 'content-type', 'idempotency-key']);
    expect(cors.AllowMethods.sort()).toEqual([...new Set(apiRouteSpecs().map((r) => r.method))].sort());
    expect(cors.AllowCredentials).toBe(false);
  });

  it('outputs the dashboard URL', () => {
    template.hasOutput('DashboardUrl', {
      Value: { 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [logicalIdOf(dashboard().distribution), 'DomainName'] }, '/']] },
    });
  });
});
