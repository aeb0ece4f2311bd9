import type { DynamoDBRecord } from 'aws-lambda';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entityOfRecord, eventOfRecord } from '#handlers/stream.ts';
import { idempotencyTableDefinition, tableDefinition } from '#store/table.ts';
import { keys } from '#store/keys.ts';
import { apiRouteSpecs, ROUTE_GROUPS } from '#lib/api-routes.ts';
import { handlerEntry } from '#lib/fleetward-function.ts';
import type { SiteStack } from '#lib/site-stack.ts';
import { parseFilterPattern, passesAnyFilter } from '#lib/lambda-event-filter.ts';
import { streamFilters } from '#lib/stream-filters.ts';
import { synthesizeSite, type SynthesizedSite } from '#test/support/synthesized-site.ts';

// One synthesis per file (of the sample real site), bundling skipped: the assertions read its template, its cdk-nag
// validation report and the acknowledgments recorded on its constructs (test/support/synthesized-site.ts).
const SITE = 'example-aws';
let synthesized: SynthesizedSite;
let stack: SiteStack;
let template: Template;
let synthError: Error | undefined;
let nagViolations: SynthesizedSite['nagViolations'] = [];
let acknowledgments: SynthesizedSite['acknowledgments'] = [];

beforeAll(() => {
  synthesized = synthesizeSite(SITE);
  ({ stack, template, synthError, nagViolations, acknowledgments } = synthesized);
}, 120_000);

afterAll(() => synthesized?.remove());

const resourcesOf = (type: string) => Object.entries(template.findResources(type)) as Array<[string, { Properties: any }]>;
const logicalIdOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);

describe('the site stack', () => {
  it('is named after the site and synthesizes cleanly', () => {
    expect(stack.stackName).toBe(`Fleetward-${SITE}`);
    expect(synthError?.message).toBeUndefined();
  });

  it('keeps the logical ids of what it retains, whichever part of the stack makes it', () => {
    // CloudFormation replaces a resource whose logical id changes: a retained one would be left behind and another made
    // (for the table, with deletion protection, the deployment fails). lib/site-part.ts keeps them; this pins them.
    const retained = Object.entries(template.toJSON().Resources as Record<string, { DeletionPolicy?: string }>)
      .filter(([, resource]) => resource.DeletionPolicy === 'Retain')
      .map(([id]) => id);
    expect(retained.sort()).toEqual(
      [
        'TableCD117FA1',
        'TenantApiLogs3062DEA6',
        'AdminApiLogsB036E224',
        'SiteAgentApiLogsBDC82B28',
        'StreamHandlerLogs4856DD3F',
        'SweepHandlerLogsE4CA6314',
        'ApiAccessLogsE9DF007D',
        'DashboardAccessLogs2F3DA5FE',
        'DashboardBucketA782FB5B',
        'DashboardDeployLogs2D03E186',
      ].sort(),
    );
  });

  it('passes the AwsSolutions checks of cdk-nag', () => {
    expect(nagViolations.map((v) => `${v.ruleName} at ${v.violatingConstructs.map((c) => c.constructPath).join(', ')}`)).toEqual([]);
  });

  it('acknowledges only justified cdk-nag findings, each with a real reason', () => {
    expect(acknowledgments.length).toBeGreaterThan(0);
    const publicRoutes = apiRouteSpecs().filter((route) => route.public);
    for (const ack of acknowledgments) {
      expect(ack.reason.length, `${ack.id} at ${ack.path}`).toBeGreaterThanOrEqual(60);
      expect(ack.reason).not.toMatch(/^(todo|tbd|n\/a|none|suppress(ed)?|ok|fine)\b/i);
    }
    // The list of what is acknowledged, and where: a new one must be added here on purpose.
    const ruleOf = (id: string) => id.replace(/^[A-Za-z-]+::/, '').replace(/\[.*$/, '');
    expect(new Set(acknowledgments.map((ack) => ruleOf(ack.id)))).toEqual(
      new Set([
        'AwsSolutions-L1',
        'AwsSolutions-SQS3',
        'AwsSolutions-IAM5',
        ...(publicRoutes.length ? ['AwsSolutions-APIG4'] : []),
        // The dashboard's distribution: geo restriction, WAF, and the default certificate's TLS policy.
        'AwsSolutions-CFR1',
        'AwsSolutions-CFR2',
        'AwsSolutions-CFR4',
      ]),
    );
    const at = (rule: string) => acknowledgments.filter((ack) => ruleOf(ack.id) === rule).map((ack) => ack.path.replace(`${stack.node.path}/`, ''));
    // The stack-wide Node 22 pin, and the runtime of BucketDeployment's own handler (the dashboard's files).
    expect(at('AwsSolutions-L1')).toEqual([stack.node.path, stack.dashboard!.deployHandler!.node.path.replace(`${stack.node.path}/`, '')]);
    expect(at('AwsSolutions-SQS3')).toEqual(['StreamReactions/StreamFailures']);
    const functionRoles = [...Object.values(stack.apiFunctions), stack.streamFunction, stack.sweepFunction].map((fn) =>
      fn.role.node.path.replace(`${stack.node.path}/`, ''),
    );
    expect(new Set(at('AwsSolutions-IAM5'))).toEqual(new Set(['Sweep/SweepScheduleRole', 'Dashboard/DeployRole', ...functionRoles]));
    // Each function role has one IAM5 acknowledgment, of exactly `*`: its reason names X-Ray's (active tracing) on every
    // role, and on the stream function's role ListStreams' too.
    const wildcardAcknowledgments = (role: string) => acknowledgments.filter((ack) => ruleOf(ack.id) === 'AwsSolutions-IAM5' && ack.path.endsWith(`/${role}`));
    const streamRole = stack.streamFunction.role.node.path.replace(`${stack.node.path}/`, '');
    for (const role of functionRoles) {
      const reasons = wildcardAcknowledgments(role);
      expect(
        reasons.map((ack) => ack.id),
        role,
      ).toEqual(['Annotation::AwsSolutions-IAM5[Resource::*]']);
      expect(reasons[0]!.reason.match(/X-Ray|ListStreams/g), role).toEqual(role === streamRole ? ['X-Ray', 'ListStreams'] : ['X-Ray']);
    }
    for (const rule of ['AwsSolutions-CFR1', 'AwsSolutions-CFR2', 'AwsSolutions-CFR4']) expect(at(rule), rule).toEqual(['Dashboard/Distribution']);
    // The sweep role's IAM5 acknowledgment covers exactly one finding: the sweep function's own `<arn>:*`.
    const iam5 = acknowledgments.filter((ack) => ruleOf(ack.id) === 'AwsSolutions-IAM5' && ack.path.endsWith('/SweepScheduleRole'));
    expect(iam5.map((ack) => ack.id)).toEqual([`Annotation::AwsSolutions-IAM5[Resource::<${logicalIdOf(stack.sweepFunction.function)}.Arn>:*]`]);
    // The dashboard's deploy role: exactly the S3 wildcards of BucketDeployment's grants, one by one.
    const deployIam5 = acknowledgments
      .filter((ack) => ruleOf(ack.id) === 'AwsSolutions-IAM5' && ack.path.endsWith('/Dashboard/DeployRole'))
      .map((ack) => ack.id.replace(/^Annotation::AwsSolutions-IAM5/, ''))
      .sort();
    expect(deployIam5).toEqual(
      [
        '[Action::s3:Abort*]',
        '[Action::s3:DeleteObject*]',
        '[Action::s3:GetBucket*]',
        '[Action::s3:GetObject*]',
        '[Action::s3:List*]',
        `[Resource::<${logicalIdOf(stack.dashboard!.bucket)}.Arn>/*]`,
        '[Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*]',
      ].sort(),
    );
    expect(at('AwsSolutions-APIG4')).toHaveLength(publicRoutes.length);
  });
});

describe('HTTP API', () => {
  // The routes of API.md, the contract: each must be wired whatever the route table says.
  const contract = [
    'POST /v2/org/{org}/nico/instance',
    'GET /v2/org/{org}/nico/instance',
    'GET /v2/org/{org}/nico/instance/{id}',
    'PATCH /v2/org/{org}/nico/instance/{id}',
    'DELETE /v2/org/{org}/nico/instance/{id}',
    'POST /api/v1/instances/release',
    'GET /v2/org/{org}/nico/machine',
    'GET /v2/org/{org}/nico/machine/{machineId}',
    'PATCH /v2/org/{org}/nico/machine/{machineId}',
    'POST /v2/org/{org}/nico/meta-instance',
    'GET /v2/org/{org}/nico/meta-instance',
    'GET /v2/org/{org}/nico/meta-instance/{id}',
    'DELETE /v2/org/{org}/nico/meta-instance/{id}',
    'POST /admin/machines',
    'GET /admin/machines',
    'GET /admin/machines/{id}',
    'GET /admin/machines/{id}/health-overrides',
    'POST /admin/machines/{id}/health-overrides',
    'DELETE /admin/machines/{id}/health-overrides/{source}',
    'PATCH /admin/machines/{id}/labels',
    'GET /admin/machines/{id}/history',
    'PUT /admin/tenants/{org}',
    'GET /admin/config',
    'GET /admin/safety',
    'POST /admin/safety/repair-storm/reset',
    'GET /admin/repairs',
    'POST /site/v1/heartbeats',
    'POST /site/v1/machines/{id}/cleanup',
  ];

  const routes = () => new Map(resourcesOf('AWS::ApiGatewayV2::Route').map(([, r]) => [r.Properties.RouteKey as string, r.Properties]));
  const jwtAuthorizerId = () => {
    const authorizers = resourcesOf('AWS::ApiGatewayV2::Authorizer');
    expect(authorizers).toHaveLength(1);
    return authorizers[0]![0];
  };

  it('has a JWT authorizer with the issuer and audience of the site config', () => {
    const { config } = stack.site;
    template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      AuthorizerType: 'JWT',
      IdentitySource: ['$request.header.Authorization'],
      JwtConfiguration: { Issuer: config.auth.issuer, Audience: [config.auth.audience] },
    });
  });

  it('wires every API.md route behind the JWT authorizer', () => {
    const wired = routes();
    const authorizer = jwtAuthorizerId();
    for (const key of contract) {
      const route = wired.get(key);
      expect(route, key).toBeDefined();
      expect(route.AuthorizationType, key).toBe('JWT');
      expect(route.AuthorizerId, key).toEqual({ Ref: authorizer });
    }
  });

  it('wires exactly the route table, each route to its group function; only public routes go without a token', () => {
    const wired = routes();
    const specs = apiRouteSpecs();
    expect([...wired.keys()].sort()).toEqual(specs.map((s) => `${s.method} ${s.path}`).sort());
    const integrations = new Map(resourcesOf('AWS::ApiGatewayV2::Integration').map(([id, r]) => [id, r.Properties]));
    const authorizer = jwtAuthorizerId();
    for (const spec of specs) {
      const route = wired.get(`${spec.method} ${spec.path}`);
      if (spec.public) {
        expect(route.AuthorizationType).toBe('NONE');
      } else {
        expect(route.AuthorizationType).toBe('JWT');
        expect(route.AuthorizerId).toEqual({ Ref: authorizer });
      }
      const integrationId = (route.Target['Fn::Join'][1] as unknown[]).find((part: any) => part.Ref)!;
      const integration = integrations.get((integrationId as { Ref: string }).Ref);
      expect(integration.IntegrationUri['Fn::GetAtt'][0], `${spec.method} ${spec.path}`).toBe(logicalIdOf(stack.apiFunctions[spec.group].function));
      expect(integration.PayloadFormatVersion).toBe('2.0');
    }
  });

  it("runs one function per route group, each on its group's own entry, with access logs on the stage", () => {
    expect(Object.keys(stack.apiFunctions).sort()).toEqual([...ROUTE_GROUPS].sort());
    for (const group of ROUTE_GROUPS) expect(stack.apiFunctions[group].entry, group).toBe(handlerEntry(`api-${group}`));
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('requestId') },
    });
  });
});

describe('functions', () => {
  // The site's own functions; the only other one is BucketDeployment's handler copying the dashboard's files.
  const functions = () => resourcesOf('AWS::Lambda::Function').filter(([id]) => id !== logicalIdOf(stack.dashboard!.deployHandler!));

  it('run Node 22 on arm64 with the environment the handlers read, from the site config', () => {
    const { config } = stack.site;
    expect(resourcesOf('AWS::Lambda::Function')).toHaveLength(ROUTE_GROUPS.length + 3);
    expect(functions()).toHaveLength(ROUTE_GROUPS.length + 2);
    for (const [id, fn] of functions()) {
      expect(fn.Properties.Runtime, id).toBe('nodejs22.x');
      expect(fn.Properties.Architectures, id).toEqual(['arm64']);
      expect(fn.Properties.Handler, id).toBe('index.handler');
      const env = fn.Properties.Environment.Variables;
      expect(env.TABLE_NAME, id).toEqual({ Ref: logicalIdOf(stack.table) });
      expect(env.IDEMPOTENCY_TABLE_NAME, id).toEqual({ Ref: logicalIdOf(stack.idempotencyTable) });
      expect(env.EVENT_BUS_NAME, id).toEqual({ Ref: logicalIdOf(stack.bus) });
      expect(JSON.parse(env.SITE_CONFIG_JSON), id).toEqual(config);
    }
  });

  it('tell only the functions that call the site agent where it is and where their signing keys are', () => {
    const callers = new Set(stack.agentCallers.map((fn) => logicalIdOf(fn.function)));
    expect(callers).toEqual(new Set([logicalIdOf(stack.streamFunction.function), logicalIdOf(stack.sweepFunction.function)]));
    for (const [id, fn] of functions()) {
      const env = fn.Properties.Environment.Variables;
      expect(env.SITE_AGENT_URL, id).toBe(callers.has(id) ? stack.site.config.site.agent_url : undefined);
      expect(env.SITE_AGENT_SIGNING_SECRET_ARN, id).toBe(callers.has(id) ? stack.site.config.site_agent.signing_secret_arn : undefined);
    }
  });

  it('run outside any VPC when the site file has no [site_agent] vpc', () => {
    expect(stack.site.config.site_agent.vpc).toBeUndefined();
    for (const [id, fn] of functions()) expect(fn.Properties.VpcConfig, id).toBeUndefined();
    expect(resourcesOf('AWS::EC2::VPCEndpoint')).toEqual([]);
    expect(resourcesOf('AWS::EC2::SecurityGroup')).toEqual([]);
  });

  it('are traced actively with X-Ray, and may only send traces beyond their own grants', () => {
    for (const [id, fn] of functions()) expect(fn.Properties.TracingConfig, id).toEqual({ Mode: 'Active' });
    const xrayStatements = resourcesOf('AWS::IAM::Policy')
      .flatMap(([, policy]) => policy.Properties.PolicyDocument.Statement as Array<{ Action: string | string[]; Resource: unknown }>)
      .filter((statement) => [statement.Action].flat().some((action) => action.startsWith('xray:')));
    expect(xrayStatements.length).toBe(functions().length);
    for (const statement of xrayStatements) {
      expect([statement.Action].flat().sort()).toEqual(['xray:PutTelemetryRecords', 'xray:PutTraceSegments']);
      expect(statement.Resource).toBe('*');
    }
  });

  it('log to their own log group, with a retention', () => {
    for (const [id, fn] of resourcesOf('AWS::Lambda::Function')) {
      expect(fn.Properties.LoggingConfig.LogGroup, id).toEqual({ Ref: expect.any(String) });
    }
    for (const [id, group] of resourcesOf('AWS::Logs::LogGroup')) {
      expect(group.Properties.RetentionInDays, id).toBeGreaterThan(0);
    }
  });
});

describe('table', () => {
  const tables = () => new Map(resourcesOf('AWS::DynamoDB::Table'));

  it('is on-demand, with point-in-time recovery, deletion protection, a stream of both images and a TTL on `expiresAt`', () => {
    const table = tables().get(logicalIdOf(stack.table))!;
    expect(table.Properties).toMatchObject({
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      DeletionProtectionEnabled: true,
      StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
      // Orgs' capacity history points expire (domain/capacity/capacity-history.ts).
      TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
    });
    template.hasResource('AWS::DynamoDB::Table', { Properties: Match.objectLike({ DeletionProtectionEnabled: true }), DeletionPolicy: 'Retain' });
  });

  it('has the keys and GSIs of tableDefinition(), exactly', () => {
    const definition = tableDefinition('x');
    const table = tables().get(logicalIdOf(stack.table))!.Properties;
    const byName = <T extends { AttributeName?: string; IndexName?: string }>(list: T[]) =>
      [...list].sort((a, b) => String(a.AttributeName ?? a.IndexName).localeCompare(String(b.AttributeName ?? b.IndexName)));
    expect(table.KeySchema).toEqual(definition.KeySchema);
    expect(byName(table.AttributeDefinitions)).toEqual(byName(definition.AttributeDefinitions!));
    expect(byName(table.GlobalSecondaryIndexes)).toEqual(byName(definition.GlobalSecondaryIndexes!));
  });

  it('keeps idempotency records in their own table with a TTL on `expiration`', () => {
    const definition = idempotencyTableDefinition('x');
    const table = tables().get(logicalIdOf(stack.idempotencyTable))!.Properties;
    expect(table.KeySchema).toEqual(definition.KeySchema);
    expect(table.AttributeDefinitions).toEqual(definition.AttributeDefinitions);
    expect(table.TimeToLiveSpecification).toEqual({ AttributeName: 'expiration', Enabled: true });
    expect(table.BillingMode).toBe('PAY_PER_REQUEST');
  });
});

describe('stream reactions', () => {
  const mapping = () => resourcesOf('AWS::Lambda::EventSourceMapping')[0]![1].Properties;

  it('map the table stream to the stream handler with bounded, partial-failure-aware retries and a DLQ', () => {
    const mappings = resourcesOf('AWS::Lambda::EventSourceMapping');
    expect(mappings).toHaveLength(1);
    const mapping = mappings[0]![1].Properties;
    expect(mapping).toMatchObject({
      EventSourceArn: { 'Fn::GetAtt': [logicalIdOf(stack.table), 'StreamArn'] },
      FunctionName: { Ref: logicalIdOf(stack.streamFunction.function) },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: true,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [logicalIdOf(stack.streamFailures), 'Arn'] } } },
    });
    expect(mapping.MaximumRetryAttempts).toBeGreaterThanOrEqual(0);
    expect(mapping.MaximumRetryAttempts).toBeLessThanOrEqual(20);
    expect(mapping.MaximumRecordAgeInSeconds).toBeGreaterThanOrEqual(60);
    expect(mapping.MaximumRecordAgeInSeconds).toBeLessThanOrEqual(6 * 3600);
    expect(mapping.FilterCriteria.Filters).toEqual(streamFilters().map((f) => ({ Pattern: f.pattern })));
  });

  const record = (eventName: 'INSERT' | 'MODIFY' | 'REMOVE', pk: string, sk: string, newImage?: Record<string, unknown>): DynamoDBRecord => ({
    eventName,
    eventSource: 'aws:dynamodb',
    dynamodb: {
      Keys: { pk: { S: pk }, sk: { S: sk } },
      ...(eventName === 'REMOVE' ? {} : { NewImage: { pk: { S: pk }, sk: { S: sk }, ...newImage } as never }),
    },
  });
  const event = { event: { M: { type: { S: 'RepairRequested' }, detail: { M: { machineId: { S: 'm1' } } } } }, machineId: { S: 'm1' }, at: { S: 'now' } };
  const samples: Array<[string, DynamoDBRecord]> = [];
  for (const name of ['INSERT', 'MODIFY', 'REMOVE'] as const) {
    samples.push(
      [`${name} machine`, record(name, 'MACHINE#m1', '#MACHINE')],
      [`${name} instance`, record(name, 'INSTANCE#i1', '#INSTANCE')],
      [`${name} meta-instance`, record(name, 'META#x1', '#META')],
      [`${name} tenant`, record(name, 'TENANT#acme', '#TENANT')],
      [`${name} site heartbeat`, record(name, keys.siteHeartbeat.pk, keys.siteHeartbeat.sk)],
      [`${name} roster digests`, record(name, keys.siteRosterDigests.pk, keys.siteRosterDigests.sk)],
      [`${name} roster bucket`, record(name, 'ROSTER#07', '#ROSTER')],
      [`${name} stale check`, record(name, 'STALE-CHECK#site', '#STALE-CHECK')],
      [`${name} site history with event`, record(name, 'SITE', 'HISTORY#2025#agent-silent', event)],
      [`${name} site history without event`, record(name, 'SITE', 'HISTORY#2025#x')],
      [`${name} history with event`, record(name, 'MACHINE#m1', 'HISTORY#2025#ab', event)],
      [`${name} history without event`, record(name, 'MACHINE#m1', 'HISTORY#2025#cd')],
      [`${name} look-alike`, record(name, 'MACHINES#m1', '#MACHINES')],
    );
  }

  it.each(samples)('let through exactly what the stream handler acts on: %s', (_name, sample) => {
    const wanted = entityOfRecord(sample) !== null || eventOfRecord(sample) !== null;
    const patterns = mapping().FilterCriteria.Filters.map((filter: { Pattern: string }) => parseFilterPattern(filter.Pattern));
    const passes = passesAnyFilter(patterns, sample);
    expect(passes).toBe(wanted);
  });
});
