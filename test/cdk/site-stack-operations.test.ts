import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventCatalog, EVENT_TYPES, type EventType } from '#domain/events/event-schemas.ts';
import type { SiteStack } from '#lib/site-stack.ts';
import { EVENT_SOURCE } from '#runtime/events.ts';
import { SWEEP_FOLLOW_UP } from '#reconcilers/sweep-follow-up.ts';
import { SITE_AGENT_SILENT_METRIC } from '#reconcilers/sweep.ts';
import { synthesizeSite, type SynthesizedSite } from '#test/support/synthesized-site.ts';

// One synthesis per file (of the sample real site), bundling skipped: the assertions read its template, its cdk-nag
// validation report and the acknowledgments recorded on its constructs (test/support/synthesized-site.ts).
const SITE = 'example-aws';
let synthesized: SynthesizedSite;
let stack: SiteStack;
let template: Template;

beforeAll(() => {
  synthesized = synthesizeSite(SITE);
  ({ stack, template } = synthesized);
}, 120_000);

afterAll(() => synthesized?.remove());

const resourcesOf = (type: string) => Object.entries(template.findResources(type)) as Array<[string, { Properties: any }]>;
const logicalIdOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);

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
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [logicalIdOf(stack.sweepFunction.function), 'Arn'] },
          RetryPolicy: Match.objectLike({ MaximumRetryAttempts: 0 }),
        }),
      ],
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
      (a) => a.MetricName === 'ApproximateNumberOfMessagesVisible' && a.Dimensions?.[0]?.Value?.['Fn::GetAtt']?.[0] === logicalIdOf(stack.streamFailures),
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
    // The sweep counts machines in open maintenance past their window (reconcilers/maintenance-overdue.ts).
    expect(alarms.find((a) => a.MetricName === 'MaintenanceOverdue')).toMatchObject({
      Namespace: 'Fleetward',
      Threshold: 1,
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
    const perType = [
      'Machines',
      'MachinesAllocatable',
      'MachinesAssigned',
      'MachinesQuarantined',
      'MachinesHeartbeatStale',
      'MachinesOutForRepair',
      'RepairsUnclaimed',
      'RepairsInRepair',
      'RepairsStuck',
      'TimeToReady',
    ];
    for (const name of perType)
      expect(
        searches.some((e) => e.includes(searchOf(name, 'machineType'))),
        name,
      ).toBe(true);
    expect(searches.some((e) => e.includes(searchOf('ReconcileLag', 'entity')))).toBe(true);
    expect(searches.some((e) => e.includes(searchOf('CreateFailuresByOutcome', 'outcome')))).toBe(true);
    const siteWide = lines.filter((line) => line[0] === 'Fleetward').map((line) => line.slice(1, 6).join(' '));
    for (const name of [
      'RepairBreakerTripped',
      'ReplacementsInFlight',
      'SiteAgentRosterAgeSeconds',
      'RepairsStuck',
      'CreateAttempts',
      'CreateRetries',
      'CreateSucceeded',
      'CreateFailures',
    ]) {
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
        expect(
          actions.filter((a) => a.includes('*')),
          id,
        ).toEqual([]);
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
    // Registration (BatchWriteItem) is the admin's alone; only the data migrations, which the sweep runs, delete items
    // (an earlier release's, in the contract) or Scan; nothing checks conditions in transactions.
    expect(actionsOf(statementsOf(stack.apiFunctions.tenant.role)).has('dynamodb:BatchWriteItem')).toBe(false);
    for (const fn of [...Object.values(stack.apiFunctions), stack.streamFunction, stack.sweepFunction]) {
      const tableArn = JSON.stringify({ 'Fn::GetAtt': [logicalIdOf(stack.table), 'Arn'] });
      const onTable = statementsOf(fn.role).filter((statement) => JSON.stringify(statement.Resource) === tableArn);
      const migrates = fn === stack.sweepFunction;
      expect(actionsOf(onTable).has('dynamodb:DeleteItem')).toBe(migrates);
      expect(actionsOf(onTable).has('dynamodb:Scan')).toBe(migrates);
      expect(actionsOf(onTable).has('dynamodb:ConditionCheckItem')).toBe(false);
    }
    const stream = statementsOf(stack.streamFunction.role);
    expect(actionsOf(stream).has('events:PutEvents')).toBe(true);
    expect(actionsOf(stream).has('dynamodb:GetRecords')).toBe(true);
    expect(JSON.stringify(stream)).not.toContain(logicalIdOf(stack.idempotencyTable));
    const sweep = statementsOf(stack.sweepFunction.role);
    // The sweep puts its own follow-ups on the bus, and repair events the stream left undelivered (its outbox
    // fallback); the stream only repair events.
    const putsOf = (statements: typeof sweep) => statements.filter((statement) => [statement.Action].flat().includes('events:PutEvents'));
    const onlyFrom = (source: string) =>
      expect.objectContaining({
        Resource: { 'Fn::GetAtt': [logicalIdOf(stack.bus), 'Arn'] },
        Condition: { 'ForAllValues:StringEquals': { 'events:source': [source] }, Null: { 'events:source': 'false' } },
      });
    expect(putsOf(sweep)).toEqual([onlyFrom(SWEEP_FOLLOW_UP.source), onlyFrom(EVENT_SOURCE)]);
    expect(putsOf(stream)).toEqual([onlyFrom(EVENT_SOURCE)]);
    expect(actionsOf(sweep).has('dynamodb:GetRecords')).toBe(false);
    expect(JSON.stringify(sweep)).not.toContain(logicalIdOf(stack.idempotencyTable));
  });

  it('lets exactly the functions that call the site agent read its signing keys, from that one secret', () => {
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
