import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DynamoDBRecord } from 'aws-lambda';
import { Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventCatalog, EVENT_TYPES, type EventType } from '#domain/event-schemas.ts';
import { entityOfRecord, eventOfRecord } from '#handlers/stream.ts';
import { idempotencyTableDefinition, tableDefinition } from '#store/table.ts';
import { apiRouteSpecs, ROUTE_GROUPS } from '#lib/api-routes.ts';
import { buildSiteApp } from '#lib/app.ts';
import { dashboardVendorFiles } from '#lib/dashboard-vendor.ts';
import type { SiteStack } from '#lib/site-stack.ts';
import { parseFilterPattern, passesAnyFilter } from '#lib/lambda-event-filter.ts';
import { streamFilters } from '#lib/stream-filters.ts';
import { EVENT_SOURCE } from '#runtime/events.ts';
import { SWEEP_FOLLOW_UP } from '#reconcilers/sweep-follow-up.ts';
import { SITE_AGENT_SILENT_METRIC } from '#reconcilers/sweep.ts';
import cdkJson from '../../cdk.json' with { type: 'json' };

// One synthesis for the whole file (of the sample real site), bundling skipped: the assertions read its template,
// its cdk-nag validation report and the acknowledgments recorded on its constructs.
const SITE = 'example-aws';
let outdir: string;
let stack: SiteStack;
let template: Template;
let synthError: Error | undefined;
let nagViolations: Array<{ ruleName: string; violatingConstructs: Array<{ constructPath: string }> }> = [];
let acknowledgments: Array<{ path: string; id: string; reason: string }> = [];

beforeAll(() => {
  outdir = mkdtempSync(join(tmpdir(), 'fleetward-cdk-'));
  const built = buildSiteApp({
    site: SITE,
    appProps: { outdir, context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } },
  });
  stack = built.stack;
  try {
    built.app.synth();
  } catch (error) {
    synthError = error as Error; // validation failures: reported by the cdk-nag test below, with the report
  }
  template = Template.fromJSON(JSON.parse(readFileSync(join(outdir, `${stack.artifactId}.template.json`), 'utf8')));
  const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as {
    pluginReports: Array<{ pluginName: string; violations: typeof nagViolations }>;
  };
  nagViolations = report.pluginReports.flatMap((plugin) => plugin.violations);
  acknowledgments = built.app.node.findAll().flatMap((construct) =>
    construct.node.metadata
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) => Object.entries(entry.data as Record<string, string>).map(([id, reason]) => ({ path: construct.node.path, id, reason }))),
  );
}, 120_000);

afterAll(() => {
  if (outdir) rmSync(outdir, { recursive: true, force: true });
});

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
    const functionRoles = [...Object.values(stack.apiFunctions), stack.streamFunction, stack.sweepFunction].map((fn) => fn.role.node.path.replace(`${stack.node.path}/`, ''));
    expect(new Set(at('AwsSolutions-IAM5'))).toEqual(new Set(['Sweep/SweepScheduleRole', 'Dashboard/DeployRole', ...functionRoles]));
    // Each function role has one IAM5 acknowledgment, of exactly `*`: its reason names X-Ray's (active tracing) on every
    // role, and on the stream function's role ListStreams' too.
    const wildcardAcknowledgments = (role: string) =>
      acknowledgments.filter((ack) => ruleOf(ack.id) === 'AwsSolutions-IAM5' && ack.path.endsWith(`/${role}`));
    const streamRole = stack.streamFunction.role.node.path.replace(`${stack.node.path}/`, '');
    for (const role of functionRoles) {
      const reasons = wildcardAcknowledgments(role);
      expect(reasons.map((ack) => ack.id), role).toEqual(['Annotation::AwsSolutions-IAM5[Resource::*]']);
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

  it('runs one function per route group, all on the api handler module, with access logs on the stage', () => {
    expect(Object.keys(stack.apiFunctions).sort()).toEqual([...ROUTE_GROUPS].sort());
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

  it('is on-demand, with point-in-time recovery, deletion protection and a stream of both images', () => {
    const table = tables().get(logicalIdOf(stack.table))!;
    expect(table.Properties).toMatchObject({
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      DeletionProtectionEnabled: true,
      StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
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
      [`${name} heartbeat roster`, record(name, 'SITE', 'HEARTBEAT')],
      [`${name} roster digests`, record(name, 'SITE', 'ROSTER')],
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

describe('schedule, events and alarms', () => {
  it('invoke the sweep every minute from EventBridge Scheduler', () => {
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Target: { Arn: { 'Fn::GetAtt': [logicalIdOf(stack.sweepFunction.function), 'Arn'] }, RetryPolicy: { MaximumRetryAttempts: 0 } },
    });
  });

  it('have a repair event bus with an example rule for RepairRequested', () => {
    template.resourceCountIs('AWS::Events::EventBus', 1);
    template.hasResourceProperties('AWS::Events::Rule', {
      EventBusName: { Ref: logicalIdOf(stack.bus) },
      EventPattern: { source: ['fleetward'], 'detail-type': ['RepairRequested'] },
      Targets: [Match.objectLike({ Arn: Match.anyValue(), DeadLetterConfig: Match.anyValue() })],
    });
  });

  it('run the sweep again at once when a run hands its unfinished work to a follow-up', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      EventBusName: { Ref: logicalIdOf(stack.bus) },
      EventPattern: { source: [SWEEP_FOLLOW_UP.source], 'detail-type': [SWEEP_FOLLOW_UP.detailType] },
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [logicalIdOf(stack.sweepFunction.function), 'Arn'] }, RetryPolicy: Match.objectLike({ MaximumRetryAttempts: 0 }) })],
    });
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      Principal: 'events.amazonaws.com',
      FunctionName: { 'Fn::GetAtt': [logicalIdOf(stack.sweepFunction.function), 'Arn'] },
    });
  });

  it('register the JSON Schema of every event type, as docs/events/ has it, in a schema registry of the site', () => {
    const registries = resourcesOf('AWS::EventSchemas::Registry');
    expect(registries).toHaveLength(1);
    expect(registries[0]![1].Properties.RegistryName).toBe(`fleetward-${SITE}`);
    const schemas = resourcesOf('AWS::EventSchemas::Schema').map(([, schema]) => schema.Properties);
    expect(schemas.map((schema) => schema.SchemaName).sort()).toEqual(EVENT_TYPES.map((type) => `fleetward@${type}`).sort());
    for (const schema of schemas) {
      const type = schema.SchemaName.replace('fleetward@', '');
      expect(schema.RegistryName, type).toEqual({ 'Fn::GetAtt': [registries[0]![0], 'RegistryName'] });
      expect(schema.Type, type).toBe('JSONSchemaDraft4');
      const published = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'events', `${type}.json`), 'utf8'));
      expect(JSON.parse(schema.Content), type).toEqual(published);
      expect(schema.Description, type).toBe(eventCatalog[type as EventType].description);
    }
  });

  it('alarm on the on-failure queue, on every function error and on repairs stuck past their SLA', () => {
    const alarms = resourcesOf('AWS::CloudWatch::Alarm').map(([, a]) => a.Properties);
    const topic = { Ref: logicalIdOf(stack.alarmTopic) };
    for (const alarm of alarms) expect(alarm.AlarmActions).toEqual([topic]);
    const queueDepth = alarms.find(
      (a) =>
        a.MetricName === 'ApproximateNumberOfMessagesVisible' &&
        a.Dimensions?.[0]?.Value?.['Fn::GetAtt']?.[0] === logicalIdOf(stack.streamFailures),
    );
    expect(queueDepth).toMatchObject({ Namespace: 'AWS/SQS', Threshold: 1 });
    const allFunctions = [...Object.values(stack.apiFunctions), stack.streamFunction, stack.sweepFunction];
    for (const fn of allFunctions) {
      const errors = alarms.find(
        (a) => a.MetricName === 'Errors' && a.Dimensions?.some((d: any) => d.Name === 'FunctionName' && d.Value?.Ref === logicalIdOf(fn.function)),
      );
      expect(errors, fn.node.path).toMatchObject({ Namespace: 'AWS/Lambda', Threshold: 1 });
    }
    const stuck = alarms.find((a) => a.MetricName === 'RepairsStuck');
    expect(stuck).toMatchObject({
      Namespace: 'Fleetward',
      Threshold: 1,
      TreatMissingData: 'notBreaching',
      Dimensions: expect.arrayContaining([{ Name: 'site', Value: SITE }]),
    });
    // The sweep reports 1 while the site agent is silent (reconcilers/sweep.ts).
    expect(alarms.find((a) => a.MetricName === SITE_AGENT_SILENT_METRIC)).toMatchObject({
      Namespace: 'Fleetward',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      Dimensions: expect.arrayContaining([{ Name: 'site', Value: SITE }]),
    });
  });

  it('alarm on a tripped repair breaker, a silent site agent and creates failing above a rate, on the sweep and reaction metrics', () => {
    const alarms = resourcesOf('AWS::CloudWatch::Alarm').map(([, a]) => a.Properties);
    const fleetAlarm = (metricName: string) => alarms.find((a) => a.MetricName === metricName);
    const siteDimensions = [
      { Name: 'service', Value: 'fleetward' },
      { Name: 'site', Value: SITE },
    ];
    expect(fleetAlarm('RepairBreakerTripped')).toMatchObject({ Namespace: 'Fleetward', Statistic: 'Maximum', Threshold: 1, Dimensions: siteDimensions });
    // A silent site agent: one alarm, on the metric the sweep reports while the roster is older than the timeout.
    expect(alarms.filter((a) => a.AlarmDescription?.includes('site agent sent no roster'))).toHaveLength(1);
    expect(fleetAlarm(SITE_AGENT_SILENT_METRIC)).toMatchObject({ Namespace: 'Fleetward', Statistic: 'Maximum', Threshold: 1, Dimensions: siteDimensions });
    expect(fleetAlarm('CreateFailures')).toMatchObject({ Namespace: 'Fleetward', Statistic: 'Sum', Period: 900, Threshold: 5, Dimensions: siteDimensions });
  });

  it('show the fleet, repairs, creates, time to Ready and reconcile lag on a CloudWatch dashboard with the alarms', () => {
    const dashboards = resourcesOf('AWS::CloudWatch::Dashboard');
    expect(dashboards).toHaveLength(1);
    expect(dashboards[0]![1].Properties.DashboardName).toBe(`Fleetward-${SITE}`);
    // The body is a Fn::Join of literal JSON and tokens (the region, the alarms' ARNs): joined around the tokens, it parses.
    const joined = dashboards[0]![1].Properties.DashboardBody['Fn::Join'][1] as unknown[];
    const tokens = joined.filter((part) => typeof part !== 'string');
    const body = JSON.parse(joined.map((part) => (typeof part === 'string' ? part : 'TOKEN')).join('')) as {
      widgets: Array<{ properties: { metrics?: Array<Array<string | { expression?: string }>> } }>;
    };
    const lines = body.widgets.flatMap((widget) => widget.properties.metrics ?? []);
    const searches = lines.map((line) => (line[0] as { expression?: string }).expression).filter((e): e is string => e !== undefined);
    const searchOf = (name: string, dimension: string) => `{Fleetward,${dimension},service,site} MetricName="${name}" site="${SITE}"`;
    const perType = ['Machines', 'MachinesAllocatable', 'MachinesAssigned', 'MachinesQuarantined', 'MachinesHeartbeatStale', 'MachinesOutForRepair', 'RepairsUnclaimed', 'RepairsInRepair', 'RepairsStuck', 'TimeToReady'];
    for (const name of perType) expect(searches.some((e) => e.includes(searchOf(name, 'machineType'))), name).toBe(true);
    expect(searches.some((e) => e.includes(searchOf('ReconcileLag', 'entity')))).toBe(true);
    expect(searches.some((e) => e.includes(searchOf('CreateFailuresByOutcome', 'outcome')))).toBe(true);
    const siteWide = lines.filter((line) => line[0] === 'Fleetward').map((line) => line.slice(1, 6).join(' '));
    for (const name of ['RepairBreakerTripped', 'ReplacementsInFlight', 'SiteAgentRosterAgeSeconds', 'RepairsStuck', 'CreateAttempts', 'CreateRetries', 'CreateSucceeded', 'CreateFailures']) {
      expect(siteWide, name).toContain(`${name} service fleetward site ${SITE}`);
    }
    const tokenText = JSON.stringify(tokens);
    const alarmOf = (alarmId: string) => stack.node.findAll().find((construct) => construct.node.id === alarmId)!;
    for (const alarmId of ['RepairBreakerTrippedAlarm', 'SiteAgentSilentAlarm', 'CreateFailuresAlarm']) {
      expect(tokenText, alarmId).toContain(logicalIdOf(alarmOf(alarmId)));
    }
  });
});

describe('IAM', () => {
  const statementsOf = (role: { node: { defaultChild?: unknown } }) => {
    const roleId = logicalIdOf(role);
    return resourcesOf('AWS::IAM::Policy')
      .filter(([, p]) => p.Properties.Roles.some((r: any) => r.Ref === roleId))
      .flatMap(([, p]) => p.Properties.PolicyDocument.Statement as Array<{ Action: string | string[]; Resource: unknown }>);
  };
  const actionsOf = (statements: Array<{ Action: string | string[] }>) => new Set(statements.flatMap((s) => [s.Action].flat()));

  it('grants no dynamodb: action on a wildcard resource but ListStreams, which takes no other, alone in its statement', () => {
    for (const [id, policy] of resourcesOf('AWS::IAM::Policy')) {
      for (const statement of policy.Properties.PolicyDocument.Statement) {
        const actions = [statement.Action].flat() as string[];
        if (!actions.some((a) => a.startsWith('dynamodb:'))) continue;
        if (actions.includes('dynamodb:ListStreams')) {
          expect({ actions, resource: statement.Resource }, id).toEqual({ actions: ['dynamodb:ListStreams'], resource: '*' });
          continue;
        }
        expect(actions.filter((a) => a.includes('*')), id).toEqual([]);
        const text = JSON.stringify(statement.Resource);
        expect(statement.Resource, id).not.toBe('*');
        expect(text, id).not.toMatch(/"\*"|\/\*"|index\/\*/);
      }
    }
  });

  it('gives each function only what it calls', () => {
    for (const fn of Object.values(stack.apiFunctions)) {
      const actions = actionsOf(statementsOf(fn.role));
      expect(actions.has('dynamodb:TransactWriteItems') || actions.has('dynamodb:PutItem')).toBe(true);
      expect(JSON.stringify(statementsOf(fn.role))).toContain(logicalIdOf(stack.idempotencyTable));
      expect(actions.has('events:PutEvents')).toBe(false);
      expect(actions.has('dynamodb:GetRecords')).toBe(false);
    }
    // Registration (BatchWriteItem) is the admin's alone; nothing deletes items or checks conditions in transactions.
    expect(actionsOf(statementsOf(stack.apiFunctions.tenant.role)).has('dynamodb:BatchWriteItem')).toBe(false);
    for (const fn of [...Object.values(stack.apiFunctions), stack.streamFunction, stack.sweepFunction]) {
      const tableArn = JSON.stringify({ 'Fn::GetAtt': [logicalIdOf(stack.table), 'Arn'] });
      const onTable = statementsOf(fn.role).filter((statement) => JSON.stringify(statement.Resource) === tableArn);
      expect(actionsOf(onTable).has('dynamodb:DeleteItem')).toBe(false);
      expect(actionsOf(onTable).has('dynamodb:ConditionCheckItem')).toBe(false);
    }
    const stream = statementsOf(stack.streamFunction.role);
    expect(actionsOf(stream).has('events:PutEvents')).toBe(true);
    expect(actionsOf(stream).has('dynamodb:GetRecords')).toBe(true);
    expect(JSON.stringify(stream)).not.toContain(logicalIdOf(stack.idempotencyTable));
    const sweep = statementsOf(stack.sweepFunction.role);
    // The sweep puts only its own follow-ups on the bus, never a repair event; the stream only repair events.
    const putsOf = (statements: typeof sweep) => statements.filter((statement) => [statement.Action].flat().includes('events:PutEvents'));
    const onlyFrom = (source: string) =>
      expect.objectContaining({
        Resource: { 'Fn::GetAtt': [logicalIdOf(stack.bus), 'Arn'] },
        Condition: { 'ForAllValues:StringEquals': { 'events:source': [source] }, Null: { 'events:source': 'false' } },
      });
    expect(putsOf(sweep)).toEqual([onlyFrom(SWEEP_FOLLOW_UP.source)]);
    expect(putsOf(stream)).toEqual([onlyFrom(EVENT_SOURCE)]);
    expect(actionsOf(sweep).has('dynamodb:GetRecords')).toBe(false);
    expect(JSON.stringify(sweep)).not.toContain(logicalIdOf(stack.idempotencyTable));
    expect(actionsOf(sweep).has('dynamodb:Scan')).toBe(false);
  });

  it("lets exactly the functions that call the site agent read its signing keys, from that one secret", () => {
    const arn = stack.site.config.site_agent.signing_secret_arn;
    const secretReads = (role: { node: { defaultChild?: unknown } }) =>
      statementsOf(role).filter((statement) => [statement.Action].flat().some((action) => action.startsWith('secretsmanager:')));
    for (const fn of stack.agentCallers) {
      expect(secretReads(fn.role)).toEqual([expect.objectContaining({ Effect: 'Allow', Action: 'secretsmanager:GetSecretValue', Resource: arn })]);
    }
    for (const fn of Object.values(stack.apiFunctions)) expect(secretReads(fn.role)).toEqual([]);
    const everywhere = resourcesOf('AWS::IAM::Policy').flatMap(
      ([, policy]) => policy.Properties.PolicyDocument.Statement as Array<{ Action: string | string[] }>,
    );
    expect(everywhere.filter((statement) => JSON.stringify(statement.Action).includes('secretsmanager:'))).toHaveLength(stack.agentCallers.length);
  });

  it('attaches no AWS managed policy to the function roles', () => {
    for (const [id, role] of resourcesOf('AWS::IAM::Role')) expect(role.Properties.ManagedPolicyArns, id).toBeUndefined();
  });
});

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
    expect(resourcesOf('AWS::S3::Bucket').map(([id]) => id).sort()).toEqual([bucketId, logsId].sort());
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
    const parts = written.apiUrl.split(/(<<marker:0xbaba:\d+>>)/).filter(Boolean).map((part) => markers[part] ?? part);
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
    template.hasOutput('DashboardUrl', { Value: { 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [logicalIdOf(dashboard().distribution), 'DomainName'] }, '/']] } });
  });
});
