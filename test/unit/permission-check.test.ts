import { describe, expect, it } from 'vitest';
import { checkPermissions, type CallToCheck } from '#test/support/iam/permission-check.ts';
import type { PolicyStatement } from '#test/support/iam/role-policies.ts';

// The IAM check itself (test/iam holds the e2e suite's calls against the stack with it), on a small hand-made role.

const table = 'arn:aws:dynamodb:eu-west-1:111122223333:table/Things';
const stream = `${table}/stream/2020-01-01T00:00:00.000`;
const bus = 'arn:aws:events:eu-west-1:111122223333:event-bus/things';

const role: PolicyStatement[] = [
  { Sid: 'Items', Effect: 'Allow', Action: ['dynamodb:GetItem', 'dynamodb:PutItem'], Resource: table },
  { Sid: 'Index', Effect: 'Allow', Action: 'dynamodb:Query', Resource: `${table}/index/byOwner` },
  {
    Sid: 'Events',
    Effect: 'Allow',
    Action: 'events:PutEvents',
    Resource: bus,
    Condition: { 'ForAllValues:StringEquals': { 'events:source': ['things'] }, Null: { 'events:source': 'false' } },
  },
  { Sid: 'Logs', Effect: 'Allow', Action: 'logs:PutLogEvents', Resource: 'arn:aws:logs:eu-west-1:111122223333:log-group:things:*' },
];
const awsOnlyActions = { 'logs:PutLogEvents': 'Lambda writes the logs', 'dynamodb:ListStreams': 'the event source mapping lists streams' };
const used: CallToCheck[] = [
  { function: 'Fn', action: 'dynamodb:GetItem', resource: table },
  { function: 'Fn', action: 'dynamodb:PutItem', resource: table },
  { function: 'Fn', action: 'dynamodb:Query', resource: `${table}/index/byOwner` },
  { function: 'Fn', action: 'events:PutEvents', resource: bus, context: { 'events:source': ['things'], 'events:detail-type': ['ThingMade'] } },
];
const check = (calls: CallToCheck[], policy = role) => checkPermissions({ policies: { Fn: policy }, calls, awsOnlyActions });

describe('the permission check', () => {
  it('finds nothing when every call is allowed and every grant used (AWS-only ones aside)', async () => {
    expect(await check(used)).toEqual({ denied: [], unused: [] });
  });

  it('reports a call the role denies, naming the function, the action and the resource', async () => {
    const findings = await check([...used, { function: 'Fn', action: 'dynamodb:BatchWriteItem', resource: table, recordedAs: 'table/main' }]);
    expect(findings.denied).toEqual([`Fn: dynamodb:BatchWriteItem on table/main (${table}) is denied by its role (ImplicitlyDenied)`]);
    expect(findings.unused).toEqual([]);
  });

  it('denies a query of an index the role does not name, and an event of another source', async () => {
    const findings = await check([
      ...used,
      { function: 'Fn', action: 'dynamodb:Query', resource: `${table}/index/byAge` },
      { function: 'Fn', action: 'events:PutEvents', resource: bus, context: { 'events:source': ['things', 'other'], 'events:detail-type': ['ThingMade'] } },
    ]);
    expect(findings.denied).toEqual([
      expect.stringMatching(/^Fn: dynamodb:Query on .*\/index\/byAge is denied/),
      expect.stringMatching(/^Fn: events:PutEvents on .* with .*"other".* is denied/),
    ]);
  });

  it('reports a call of a function the stack does not have', async () => {
    expect((await check([...used, { function: 'Ghost', action: 'dynamodb:GetItem', resource: table }])).denied).toEqual([
      expect.stringMatching(/^Ghost: dynamodb:GetItem on .*no such function/),
    ]);
  });

  it('reports each granted action and resource that no call used', async () => {
    const findings = await check(used.filter((call) => call.action !== 'dynamodb:PutItem' && call.action !== 'events:PutEvents'));
    expect(findings.denied).toEqual([]);
    expect(findings.unused).toEqual([
      `Fn: dynamodb:PutItem on ${table} (statement Items) is granted but nothing recorded used it`,
      `Fn: events:PutEvents on ${bus} (statement Events) is granted but nothing recorded used it`,
    ]);
  });

  it('takes a grant used only by a call its condition allows: an event of another source uses no grant', async () => {
    const otherSource = { 'events:source': ['other'], 'events:detail-type': ['X'] };
    const others = used.map((call) => (call.action === 'events:PutEvents' ? { ...call, context: otherSource } : call));
    expect((await check(others)).unused).toEqual([expect.stringMatching(/^Fn: events:PutEvents on .* is granted but nothing recorded used it/)]);
  });

  it('reports an AWS-only grant on a resource its action does not take, which can allow nothing', async () => {
    const findings = await check(used, [...role, { Sid: 'Streams', Effect: 'Allow', Action: 'dynamodb:ListStreams', Resource: stream }]);
    expect(findings.unused).toEqual([expect.stringMatching(/^Fn: dynamodb:ListStreams on .*\/stream\/.* can allow nothing/)]);
    expect((await check(used, [...role, { Sid: 'Streams', Effect: 'Allow', Action: 'dynamodb:ListStreams', Resource: '*' }])).unused).toEqual([]);
  });
});
