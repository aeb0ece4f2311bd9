import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SiteConfigError } from '#config/site-config.ts';
import { buildSiteApp } from '#lib/app.ts';
import { defaultSitesDir, loadSite } from '#lib/site.ts';
import type { SiteStack } from '#lib/site-stack.ts';
import cdkJson from '../../cdk.json' with { type: 'json' };

// The sample real site with `[site_agent] vpc`: once with the endpoints the stack makes, once with the VPC's own
// (`create_endpoints = false`); bundling skipped, cdk-nag as in `cdk synth`. The same site without `vpc`, where
// nothing is in a VPC, is checked in site-stack.test.ts.
const SITE = 'example-aws';
const vpc = {
  vpcId: 'vpc-0123456789abcdef0',
  subnetIds: ['subnet-0123456789abcdef0', 'subnet-0fedcba9876543210'],
  securityGroupIds: ['sg-0123456789abcdef0', 'sg-0fedcba9876543210'],
  routeTableIds: ['rtb-0123456789abcdef0', 'rtb-0fedcba9876543210'],
};
const vpcTable = (extra = '') => `
[site_agent.vpc]
vpc_id = "${vpc.vpcId}"
subnet_ids = ${JSON.stringify(vpc.subnetIds)}
security_group_ids = ${JSON.stringify(vpc.securityGroupIds)}
${extra}`;

interface Synthesized {
  stack: SiteStack;
  template: Template;
  violations: string[];
  acknowledgments: Array<{ path: string; id: string; reason: string }>;
}

let scratch: string;
const synthesize = (name: string, toml: string): Synthesized => {
  const sitesDir = join(scratch, name);
  const outdir = join(sitesDir, 'out');
  mkdirSync(sitesDir);
  writeFileSync(join(sitesDir, `${SITE}.toml`), toml);
  const built = buildSiteApp({ site: SITE, sitesDir, appProps: { outdir, context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } } });
  built.app.synth();
  const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as {
    pluginReports: Array<{ violations: Array<{ ruleName: string; violatingConstructs: Array<{ constructPath: string }> }> }>;
  };
  return {
    stack: built.stack,
    template: Template.fromJSON(JSON.parse(readFileSync(join(outdir, `${built.stack.artifactId}.template.json`), 'utf8'))),
    violations: report.pluginReports.flatMap((plugin) =>
      plugin.violations.map((v) => `${v.ruleName} at ${v.violatingConstructs.map((c) => c.constructPath).join(', ')}`),
    ),
    acknowledgments: built.app.node
      .findAll()
      .flatMap((construct) =>
        construct.node.metadata
          .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
          .flatMap((entry) => Object.entries(entry.data as Record<string, string>).map(([id, reason]) => ({ path: construct.node.path, id, reason }))),
      ),
  };
};

let withEndpoints: Synthesized;
let ownEndpoints: Synthesized;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'fleetward-agent-vpc-'));
  const toml = readFileSync(join(defaultSitesDir, `${SITE}.toml`), 'utf8');
  expect(toml).not.toMatch(/^\[site_agent\.vpc\]/m);
  withEndpoints = synthesize('with', `${toml}\n${vpcTable(`route_table_ids = ${JSON.stringify(vpc.routeTableIds)}\n`)}`);
  ownEndpoints = synthesize('own', `${toml}\n${vpcTable('create_endpoints = false\n')}`);
}, 120_000);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

type Resource = { Properties: any; DependsOn?: string[] };
const resourcesOf = (synthesized: Synthesized, type: string) => Object.entries(synthesized.template.findResources(type)) as Array<[string, Resource]>;
const logicalIdOf = (synthesized: Synthesized, construct: { node: { defaultChild?: unknown } }) =>
  synthesized.stack.getLogicalId(construct.node.defaultChild as never);
/** Every function of the stack by logical id, with whether it calls the site agent. */
const functionsOf = (synthesized: Synthesized) => {
  const callers = new Set(synthesized.stack.agentCallers.map((fn) => logicalIdOf(synthesized, fn.function)));
  return resourcesOf(synthesized, 'AWS::Lambda::Function').map(([id, fn]) => ({ id, fn, callsAgent: callers.has(id) }));
};
const policyStatementsOf = (synthesized: Synthesized, role: { node: { defaultChild?: unknown } }) => {
  const roleId = logicalIdOf(synthesized, role);
  return resourcesOf(synthesized, 'AWS::IAM::Policy')
    .filter(([, policy]) => policy.Properties.Roles.some((r: { Ref: string }) => r.Ref === roleId))
    .flatMap(([, policy]) => policy.Properties.PolicyDocument.Statement as Array<{ Action: string | string[]; Resource: unknown }>);
};

describe('[site_agent] vpc', () => {
  it('synthesizes with no cdk-nag finding left, acknowledging only what the site without it does', () => {
    for (const synthesized of [withEndpoints, ownEndpoints]) {
      expect(synthesized.violations).toEqual([]);
      const rules = new Set(synthesized.acknowledgments.map((ack) => ack.id.replace(/^[A-Za-z-]+::/, '').replace(/\[.*$/, '')));
      expect(rules).toEqual(
        new Set([
          ...['AwsSolutions-L1', 'AwsSolutions-SQS3', 'AwsSolutions-IAM5', 'AwsSolutions-APIG4', 'AwsSolutions-CFR1', 'AwsSolutions-CFR2', 'AwsSolutions-CFR4'],
          // CDK's own warnings about a VPC imported by id: its zones, and its subnets' route tables, which nothing reads.
          '@aws-cdk/aws-ec2:vpcAttributeIsListTokenavailabilityZones',
          '@aws-cdk/aws-ec2:noSubnetRouteTableId',
        ]),
      );
      const network = synthesized.stack.agentNetwork!;
      const at = (rule: string) => synthesized.acknowledgments.filter((ack) => ack.id.endsWith(rule)).map((ack) => ack.path);
      expect(at('vpcAttributeIsListTokenavailabilityZones')).toEqual([network.vpc.node.path]);
      expect(at('noSubnetRouteTableId')).toEqual(network.subnets.map((subnet) => subnet.node.path));
      for (const ack of synthesized.acknowledgments) expect(ack.reason.length, `${ack.id} at ${ack.path}`).toBeGreaterThanOrEqual(60);
    }
  });

  it('puts exactly the functions that call the site agent (stream and sweep) in its subnets, with its security groups', () => {
    const { stack } = withEndpoints;
    expect(stack.agentCallers).toEqual([stack.streamFunction, stack.sweepFunction]);
    const functions = functionsOf(withEndpoints);
    expect(functions.filter((f) => f.callsAgent)).toHaveLength(2);
    for (const { id, fn, callsAgent } of functions) {
      expect(fn.Properties.VpcConfig, id).toEqual(callsAgent ? { SubnetIds: vpc.subnetIds, SecurityGroupIds: vpc.securityGroupIds } : undefined);
    }
  });

  it('lets those functions, and only them, manage their network interfaces', () => {
    const { stack } = withEndpoints;
    const eniStatements = (role: { node: { defaultChild?: unknown } }) =>
      policyStatementsOf(withEndpoints, role).filter((statement) => [statement.Action].flat().includes('ec2:CreateNetworkInterface'));
    for (const fn of stack.agentCallers) {
      const [statement, ...others] = eniStatements(fn.role);
      expect(others).toEqual([]);
      expect([statement!.Action].flat().sort()).toEqual([
        'ec2:AssignPrivateIpAddresses',
        'ec2:CreateNetworkInterface',
        'ec2:DeleteNetworkInterface',
        'ec2:DescribeNetworkInterfaces',
        'ec2:DescribeSubnets',
        'ec2:UnassignPrivateIpAddresses',
      ]);
    }
    for (const fn of Object.values(stack.apiFunctions)) expect(eniStatements(fn.role)).toEqual([]);
    // Their roles' acknowledgment of Resource "*" says why it now covers the network interface actions too.
    const callerRoles = stack.agentCallers.map((fn) => fn.role.node.path);
    const iam5 = withEndpoints.acknowledgments.filter((ack) => ack.id.endsWith('AwsSolutions-IAM5[Resource::*]'));
    for (const ack of iam5) expect(ack.reason.includes('network interface'), ack.path).toBe(callerRoles.includes(ack.path));
  });

  it('makes the endpoints they need: a DynamoDB gateway on the route tables, EventBridge and Secrets Manager in the subnets', () => {
    const endpoints = resourcesOf(withEndpoints, 'AWS::EC2::VPCEndpoint').map(([, endpoint]) => endpoint.Properties);
    const service = (name: string) => ({ 'Fn::Join': ['', ['com.amazonaws.', { Ref: 'AWS::Region' }, `.${name}`]] });
    const endpointGroup = { 'Fn::GetAtt': [logicalIdOf(withEndpoints, withEndpoints.stack.agentNetwork!.endpointSecurityGroup!), 'GroupId'] };
    expect(endpoints).toHaveLength(3);
    expect(endpoints).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ VpcId: vpc.vpcId, ServiceName: service('dynamodb'), VpcEndpointType: 'Gateway', RouteTableIds: vpc.routeTableIds }),
        ...['events', 'secretsmanager'].map((name) =>
          expect.objectContaining({
            VpcId: vpc.vpcId,
            ServiceName: service(name),
            VpcEndpointType: 'Interface',
            SubnetIds: vpc.subnetIds,
            SecurityGroupIds: [endpointGroup],
            PrivateDnsEnabled: true,
          }),
        ),
      ]),
    );
  });

  it("admits HTTPS to the interface endpoints from the functions' security groups alone", () => {
    const groups = resourcesOf(withEndpoints, 'AWS::EC2::SecurityGroup');
    expect(groups).toHaveLength(1);
    const [, group] = groups[0]!;
    expect(group.Properties.VpcId).toBe(vpc.vpcId);
    const ingress = [
      ...(group.Properties.SecurityGroupIngress ?? []),
      ...resourcesOf(withEndpoints, 'AWS::EC2::SecurityGroupIngress').map(([, rule]) => rule.Properties),
    ];
    expect(ingress.map((rule) => [rule.SourceSecurityGroupId, rule.IpProtocol, rule.FromPort, rule.ToPort]).sort()).toEqual(
      vpc.securityGroupIds.map((id) => [id, 'tcp', 443, 443]).sort(),
    );
    expect(ingress.every((rule) => rule.CidrIp === undefined && rule.CidrIpv6 === undefined)).toBe(true);
    // Nothing leaves through it (CDK's placeholder rule that matches no traffic), and the operator's groups are left alone.
    expect(group.Properties.SecurityGroupEgress.map((rule: { CidrIp: string }) => rule.CidrIp)).toEqual(['255.255.255.255/32']);
    const intoOperatorGroups = resourcesOf(withEndpoints, 'AWS::EC2::SecurityGroupIngress').filter(([, rule]) =>
      vpc.securityGroupIds.includes(rule.Properties.GroupId),
    );
    expect(intoOperatorGroups).toEqual([]);
    expect(resourcesOf(withEndpoints, 'AWS::EC2::SecurityGroupEgress')).toEqual([]);
  });

  it('has the functions wait for the endpoints their first calls go through', () => {
    const endpointIds = resourcesOf(withEndpoints, 'AWS::EC2::VPCEndpoint').map(([id]) => id);
    for (const { id, fn, callsAgent } of functionsOf(withEndpoints)) {
      if (callsAgent) expect(fn.DependsOn, id).toEqual(expect.arrayContaining(endpointIds));
    }
  });

  it('with create_endpoints = false still puts the functions in the VPC, and makes no endpoint or security group', () => {
    for (const { id, fn, callsAgent } of functionsOf(ownEndpoints)) {
      expect(fn.Properties.VpcConfig, id).toEqual(callsAgent ? { SubnetIds: vpc.subnetIds, SecurityGroupIds: vpc.securityGroupIds } : undefined);
    }
    expect(resourcesOf(ownEndpoints, 'AWS::EC2::VPCEndpoint')).toEqual([]);
    expect(resourcesOf(ownEndpoints, 'AWS::EC2::SecurityGroup')).toEqual([]);
  });

  it('refuses endpoints without the route tables of the gateway, naming the key', () => {
    const toml = readFileSync(join(defaultSitesDir, `${SITE}.toml`), 'utf8');
    writeFileSync(join(scratch, `${SITE}.toml`), `${toml}\n${vpcTable()}`);
    expect(() => loadSite(SITE, { sitesDir: scratch })).toThrow(SiteConfigError);
    expect(() => loadSite(SITE, { sitesDir: scratch })).toThrow(/site_agent\.vpc\.route_table_ids: the DynamoDB gateway endpoint needs/);
  });
});
