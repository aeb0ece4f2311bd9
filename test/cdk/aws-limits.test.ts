import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SiteConfigError } from '#config/site-config.ts';
import { buildSiteApp } from '#lib/app.ts';
import { AWS_LIMITS, awsLimitViolations } from '#lib/aws-limits.ts';
import { API_FUNCTION_TIMEOUT_SECONDS } from '#lib/function-timeouts.ts';
import cdkJson from '../../cdk.json' with { type: 'json' };

// The stack as `cdk synth` writes it for the sample real site, bundling skipped: what AWS is handed on deploy.
let template: { Resources: Record<string, { Type: string; Properties?: any }> };
let accountConcurrency: number;

const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

beforeAll(() => {
  const outdir = mkdtempSync(join(tmpdir(), 'fleetward-limits-'));
  scratch.push(outdir);
  const built = buildSiteApp({ site: 'example-aws', appProps: { outdir, context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } } });
  built.app.synth();
  template = JSON.parse(readFileSync(join(outdir, `${built.stack.artifactId}.template.json`), 'utf8'));
  accountConcurrency = built.site.config.lambda.account_concurrency;
});

type Resource = { Type: string; Properties: any };
const ofType = (type: string) => Object.entries(template.Resources).filter(([, resource]) => resource.Type === type) as Array<[string, Resource]>;
const first = (type: string) => ofType(type)[0]!;

describe('the synthesized stack fits AWS limits', () => {
  it('finds no violation', () => {
    expect(awsLimitViolations(template, { accountConcurrency })).toEqual([]);
  });

  it('gives the stream mapping at most 5 filters of at most 4,096 characters', () => {
    const [, mapping] = first('AWS::Lambda::EventSourceMapping');
    const filters: Array<{ Pattern: string }> = mapping.Properties.FilterCriteria.Filters;
    expect(filters.length).toBeLessThanOrEqual(AWS_LIMITS.filtersPerEventSourceMapping);
    for (const { Pattern } of filters) expect(Pattern.length).toBeLessThanOrEqual(AWS_LIMITS.filterPatternChars);
  });

  it('times every function behind the HTTP API out before API Gateway gives up', () => {
    const integrated = ofType('AWS::ApiGatewayV2::Integration').map(([, integration]) => integration.Properties.IntegrationUri['Fn::GetAtt'][0]);
    expect(integrated.length).toBeGreaterThan(0);
    for (const id of integrated) {
      expect(template.Resources[id]!.Properties.Timeout).toBe(API_FUNCTION_TIMEOUT_SECONDS);
      expect(template.Resources[id]!.Properties.Timeout).toBeLessThan(AWS_LIMITS.httpApiIntegrationSeconds);
    }
  });
});

describe('each check names the limit it enforces', () => {
  const withResources = (resources: Record<string, { Type: string; Properties?: any }>) => ({ Resources: { ...template.Resources, ...resources } });

  it('six filters on a mapping', () => {
    const [id, mapping] = first('AWS::Lambda::EventSourceMapping');
    const six = Array.from({ length: 6 }, (_, i) => ({ Pattern: JSON.stringify({ eventName: [`E${i}`] }) }));
    const violations = awsLimitViolations(withResources({ [id]: { ...mapping, Properties: { ...mapping.Properties, FilterCriteria: { Filters: six } } } }), {
      accountConcurrency,
    });
    expect(violations.map((v) => v.rule)).toEqual(['Lambda: filters per event source mapping']);
    expect(violations[0]!.message).toContain('6 filters; Lambda allows 5');
  });

  it('a pattern over 4,096 characters, and one Lambda would not parse', () => {
    const [id, mapping] = first('AWS::Lambda::EventSourceMapping');
    const long = { Pattern: JSON.stringify({ dynamodb: { Keys: { pk: { S: Array.from({ length: 400 }, (_, i) => ({ prefix: `KIND${i}#` })) } } } }) };
    const unknown = { Pattern: JSON.stringify({ eventName: [{ 'starts-with': 'I' }] }) };
    const violations = awsLimitViolations(
      withResources({ [id]: { ...mapping, Properties: { ...mapping.Properties, FilterCriteria: { Filters: [long, unknown] } } } }),
      {
        accountConcurrency,
      },
    );
    expect(violations.map((v) => v.rule)).toEqual(['Lambda: filter pattern length', 'Lambda: filter rule syntax']);
  });

  it('reservations that leave Lambda less than its unreserved 100', () => {
    const violations = awsLimitViolations(template, { accountConcurrency: 200 });
    expect(violations.map((v) => v.rule)).toEqual(['Lambda: concurrent executions quota']);
    expect(violations[0]!.message).toContain("over the account's quota of 200 ([lambda] account_concurrency)");
  });

  it('an API function allowed 30 s', () => {
    const [, integration] = first('AWS::ApiGatewayV2::Integration');
    const id = integration.Properties.IntegrationUri['Fn::GetAtt'][0] as string;
    const fn = template.Resources[id]!;
    const violations = awsLimitViolations(withResources({ [id]: { ...fn, Properties: { ...fn.Properties, Timeout: 30 } } }), { accountConcurrency });
    expect(violations.map((v) => `${v.rule} ${v.resource}`)).toEqual([`API Gateway: HTTP API integration timeout ${id}`]);
  });
});

describe('cdk synth', () => {
  it('stops with one clear line when the reservations do not fit the account quota', () => {
    const sitesDir = mkdtempSync(join(tmpdir(), 'fleetward-sites-'));
    scratch.push(sitesDir);
    const site = '[site]\nname = "tight"\nagent_url = "https://agent.example.net"\n[auth]\nissuer = "https://idp.example.net/"\naudience = "fw"\n';
    const secret = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:fleetward/tight/agent-signing-Ab12Cd';
    writeFileSync(join(sitesDir, 'tight.toml'), `${site}[site_agent]\nsigning_secret_arn = "${secret}"\n[lambda]\naccount_concurrency = 200\n`);
    expect(() => buildSiteApp({ site: 'tight', sitesDir })).toThrow(SiteConfigError);
    expect(() => buildSiteApp({ site: 'tight', sitesDir })).toThrow(
      /reserved concurrency 130 plus the 100 Lambda keeps unreserved is 230, over the account's quota of 200/,
    );
  });
});
