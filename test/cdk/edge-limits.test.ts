import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SiteConfigError } from '#config/site-config.ts';
import { buildSiteApp } from '#lib/app.ts';
import { loadSite } from '#lib/site.ts';
import type { SiteStack } from '#lib/site-stack.ts';
import { sweepRate } from '#lib/sweep-schedule.ts';
import cdkJson from '../../cdk.json' with { type: 'json' };

// One synthesis of a site whose config sets every edge limit away from its default, with two route overrides (one
// naming both limits, one only the burst), bundling skipped. cdk-nag runs as in `cdk synth`.
const createRoute = 'POST /v2/org/{org}/nico/instance';
const heartbeatRoute = 'POST /site/v1/heartbeats';
const siteToml = (name: string, extra = '') => `
[site]
name = "${name}"
agent_url = "https://agent.example.net"
[auth]
issuer = "https://idp.example.net/"
audience = "fw"
[dashboard]
enabled = false
[site_agent]
signing_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:fleetward/edge-AbCdEf"
${extra}`;
const limits = `
[sweep]
interval_seconds = 120
[api]
rate_limit = 150
burst_limit = 300
[api.routes."${createRoute}"]
rate_limit = 50
burst_limit = 100
[api.routes."${heartbeatRoute}"]
burst_limit = 1000
[lambda]
tenant_reserved_concurrency = 80
admin_reserved_concurrency = 5
site_agent_reserved_concurrency = 30
`;

let scratch: string;
let stack: SiteStack;
let template: Template;
let nagFindings: unknown[];

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'fleetward-edge-'));
  writeFileSync(join(scratch, 'edge.toml'), siteToml('edge', limits));
  const outdir = join(scratch, 'out');
  const built = buildSiteApp({ site: 'edge', sitesDir: scratch, appProps: { outdir, context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } } });
  stack = built.stack;
  built.app.synth();
  template = Template.fromJSON(JSON.parse(readFileSync(join(outdir, `${stack.artifactId}.template.json`), 'utf8')));
  const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as { pluginReports: Array<{ violations: unknown[] }> };
  nagFindings = report.pluginReports.flatMap((plugin) => plugin.violations);
}, 120_000);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const resourcesOf = (type: string) => Object.entries(template.findResources(type)) as Array<[string, { Properties: any; DependsOn?: string[] }]>;
const logicalIdOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);

describe('edge limits from the site config', () => {
  it('synthesize with cdk-nag clean', () => {
    expect(nagFindings).toEqual([]);
  });

  it('throttle the stage by [api] and each overridden route by its override, the stage value filling what it leaves out', () => {
    const stages = resourcesOf('AWS::ApiGatewayV2::Stage');
    expect(stages).toHaveLength(1);
    const [, stage] = stages[0]!;
    expect(stage.Properties.DefaultRouteSettings).toEqual({ ThrottlingRateLimit: 150, ThrottlingBurstLimit: 300 });
    expect(stage.Properties.RouteSettings).toEqual({
      [createRoute]: { ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 },
      [heartbeatRoute]: { ThrottlingRateLimit: 150, ThrottlingBurstLimit: 1000 },
    });
  });

  it('deploy the stage after the routes its settings name', () => {
    const routeIds = new Map(resourcesOf('AWS::ApiGatewayV2::Route').map(([id, r]) => [r.Properties.RouteKey as string, id]));
    const [, stage] = resourcesOf('AWS::ApiGatewayV2::Stage')[0]!;
    expect(stage.DependsOn).toEqual(expect.arrayContaining([routeIds.get(createRoute), routeIds.get(heartbeatRoute)]));
  });

  it('reserve each API function its [lambda] concurrency, and leave the stream and sweep functions unreserved', () => {
    const functions = new Map(resourcesOf('AWS::Lambda::Function').map(([id, f]) => [id, f.Properties]));
    expect(functions.get(logicalIdOf(stack.apiFunctions.tenant.function))?.ReservedConcurrentExecutions).toBe(80);
    expect(functions.get(logicalIdOf(stack.apiFunctions.admin.function))?.ReservedConcurrentExecutions).toBe(5);
    expect(functions.get(logicalIdOf(stack.apiFunctions['site-agent'].function))?.ReservedConcurrentExecutions).toBe(30);
    expect(functions.get(logicalIdOf(stack.streamFunction.function))?.ReservedConcurrentExecutions).toBeUndefined();
    expect(functions.get(logicalIdOf(stack.sweepFunction.function))?.ReservedConcurrentExecutions).toBeUndefined();
  });

  it('run the sweep at [sweep] interval_seconds, dropping an invocation older than one interval', () => {
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(2 minutes)',
      Target: { RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 120 } },
    });
  });
});

describe('the sweep schedule rate', () => {
  const load = (name: string, interval: number) => {
    writeFileSync(join(scratch, `${name}.toml`), siteToml(name, `[sweep]\ninterval_seconds = ${interval}\n`));
    return loadSite(name, { sitesDir: scratch });
  };

  it('refuses less than a minute, or a part of one, for a deployed site, naming the key', () => {
    for (const [name, interval] of [
      ['fast', 30],
      ['odd', 90],
    ] as const) {
      const site = load(name, interval);
      expect(() => sweepRate(site)).toThrow(SiteConfigError);
      expect(() => sweepRate(site)).toThrow(`sweep.interval_seconds = ${interval}, but EventBridge Scheduler runs the sweep in whole minutes, at least one`);
    }
  });

  it('gives the local sample, whose 5 s is for the local runner, the smallest rate Scheduler has', () => {
    const local = loadSite('local');
    expect(local.config.sweep.interval_seconds).toBe(5);
    expect(sweepRate(local).toMinutes()).toBe(1);
  });
});
