import { DEFAULT_MAX_BODY_BYTES } from '#http/route.ts';
import { HEARTBEAT_MAX_BODY_BYTES } from '#site/agent-contract.ts';
import type { Role } from '#domain/core/model.ts';
import type { Route } from '#http/route.ts';
import { routes } from '#http/routes/index.ts';
import { routePath, type PathValues } from '#test/support/local-site.ts';

// The bad requests of test/e2e/bad-input.test.ts: generic cases made for every route of the table (so a new route
// gets them without touching a test), and what each known route must refuse besides.

export const routeTable: readonly Route[] = routes;

export const homeOrg: Record<Role, string> = { tenant: 'acme', 'provider-admin': 'provider', 'site-agent': 'site' };
export type Values = Omit<PathValues, 'org'> & { otherListingToken: string };

export interface BadRequest {
  path: string;
  query?: string;
  /** A string is sent as is (raw JSON text); anything else as JSON. */
  body?: unknown;
  headers?: Record<string, string>;
}
export interface Case {
  name: string;
  route: Route;
  request: (v: Values) => BadRequest;
  status: 400 | 413 | 422;
  code: string;
  /** Every one of these must be named in `errors[].path` (or be a prefix of one: `labels` matches `labels.k`). */
  errorPaths?: string[];
}

const long = (n: number, char = 'x') => char.repeat(n);
export const byOperation = new Map(routeTable.map((r) => [r.operationId, r]));
export const firstRole = (route: Route): Role => (route.roles === 'public' ? 'tenant' : route.roles[0]!);
const pathFor = (route: Route, v: Values, override: Partial<PathValues> = {}) => routePath(route, { org: homeOrg[firstRole(route)], ...v, ...override });
const paramNames = (route: Route) => [...route.path.matchAll(/\{([A-Za-z0-9_]+)\+?\}/g)].map((m) => m[1]!);
const queryShape = (route: Route): Record<string, unknown> | undefined => (route.query as { shape?: Record<string, unknown> } | undefined)?.shape;
export const isMutating = (route: Route) => route.method !== 'GET';

// ---- generic cases: every route of the table, so a new route gets them without touching this file ---------------

export function genericCases(route: Route): Case[] {
  const cases: Case[] = [];
  const at = (v: Values) => pathFor(route, v);
  const bodyForOthers = route.body ? {} : undefined;
  const shape = queryShape(route);
  if (route.query) {
    cases.push({
      name: 'an unknown query parameter',
      route,
      request: (v) => ({ path: at(v), query: 'surplus=1', body: bodyForOthers }),
      status: 422,
      code: 'validation-failed',
      errorPaths: ['query.surplus'],
    });
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      cases.push({
        name: `a prototype query key (${key})`,
        route,
        request: (v) => ({ path: at(v), query: `${key}=1`, body: bodyForOthers }),
        status: 422,
        code: 'validation-failed',
        errorPaths: [`query.${key}`],
      });
    }
  }
  if (shape && 'limit' in shape) {
    // Decimal digits only: hex, exponents, spaces and signs would coerce to numbers nobody typed.
    for (const limit of ['0', '501', 'abc', '0x10', '1e2', '%205', '%2B5', '12345678901234567890']) {
      cases.push({
        name: `limit=${limit}`,
        route,
        request: (v) => ({ path: at(v), query: `limit=${limit}` }),
        status: 422,
        code: 'validation-failed',
        errorPaths: ['query.limit'],
      });
    }
  }
  if (shape && 'nextToken' in shape) {
    const notBase64Json = '%25%25%25';
    // Well-formed base64url JSON, but no key this API ever issued: must not reach DynamoDB as an ExclusiveStartKey.
    const forged = Buffer.from(JSON.stringify({ pk: 'MACHINE#nope', unexpected: 1 })).toString('base64url');
    // Numbers the SDK's marshaller throws on (a plain Error, once a 500).
    const outOfRange = Buffer.from('{"pk":12345678901234567890}').toString('base64url');
    const beyondDouble = Buffer.from('{"pk":1e400}').toString('base64url');
    const tokens = [
      ['garbage', notBase64Json],
      ['forged', forged],
      ['out-of-range number', outOfRange],
      ['beyond-double number', beyondDouble],
    ] as const;
    for (const [label, token] of tokens) {
      cases.push({
        name: `a ${label} nextToken`,
        route,
        request: (v) => ({ path: at(v), query: `nextToken=${token}` }),
        status: 422,
        code: 'invalid-page-token',
        errorPaths: ['query.nextToken'],
      });
    }
  }
  for (const name of paramNames(route)) {
    // Another org in an `{org}` segment is a 404 (auth-matrix covers it); provider routes take any org.
    if (name === 'org' && route.path.startsWith('/v2/org/')) continue;
    const values = name === 'org' ? ['bad org!', long(65)] : [long(300)];
    for (const bad of values) {
      cases.push({
        name: `path param {${name}} = ${bad.length > 20 ? `${bad.length} chars` : JSON.stringify(bad)}`,
        route,
        request: (v) => ({ path: pathFor(route, v, { params: { [name]: bad } }), body: bodyForOthers }),
        status: 422,
        code: 'validation-failed',
        errorPaths: [`params.${name}`],
      });
    }
  }
  if (isMutating(route) && route.body) {
    cases.push({ name: 'a body that is not JSON', route, request: (v) => ({ path: at(v), body: '{"machineType": ' }), status: 400, code: 'invalid-json' });
    for (const [label, raw] of [
      ['an array', '[]'],
      ['null', 'null'],
    ] as const) {
      cases.push({ name: `a body that is ${label}`, route, request: (v) => ({ path: at(v), body: raw }), status: 422, code: 'validation-failed' });
    }
    if (route.bodyRequired) {
      cases.push({ name: 'no body at all', route, request: (v) => ({ path: at(v) }), status: 422, code: 'validation-failed' });
    }
    cases.push({
      name: 'an unknown body field (with an Idempotency-Key, which must not be remembered)',
      route,
      request: (v) => ({ path: at(v), body: { surplusField: 1 }, headers: { 'idempotency-key': `bad-input-${route.operationId}` } }),
      status: 422,
      code: 'validation-failed',
      errorPaths: ['surplusField'],
    });
  }
  return cases;
}

// ---- specific cases: what each known route must refuse ----------------------------------------------------------

const maintenance = (v: Values, over: Record<string, unknown>) => ({
  kind: 'planned',
  category: 'firmware',
  reason: 'bad input',
  scope: { machineIds: [v.machineId] },
  handBackBy: '2030-01-01T00:00:00Z',
  windowMinutes: 60,
  ...over,
});
const issue = (extra: Record<string, unknown> = {}) => ({ category: 'HARDWARE', summary: 'GPU fell off the bus', ...extra });

type Spec = [
  name: string,
  body: (v: Values) => unknown,
  errorPaths: string[],
  options?: { query?: string | ((v: Values) => string); headers?: Record<string, string>; code?: string; status?: 413 | 422 },
];

export const specific: Record<string, Spec[]> = {
  'create-instance': [
    ['machineType of the wrong type', () => ({ machineType: 123 }), ['machineType']],
    ['machineType in upper case', () => ({ machineType: 'GB200' }), ['machineType']],
    ['machineType over 64 chars', () => ({ machineType: long(65, 'g') }), ['machineType']],
    ['neither machineType nor machineId', () => ({ name: 'no-type' }), ['machineType']],
    ['both machineType and machineId', (v) => ({ machineType: 'gb200', machineId: v.machineId }), ['machineType']],
    ['a name over 63 chars', () => ({ machineType: 'gb200', name: long(64, 'n') }), ['name']],
    ['a name with upper case and underscores', () => ({ machineType: 'gb200', name: 'Bad_Name' }), ['name']],
    ['labels that are not an object', () => ({ machineType: 'gb200', labels: 'team=ml' }), ['labels']],
    ['a label value that is not a string', () => ({ machineType: 'gb200', labels: { team: 5 } }), ['labels.team']],
    ['a label value over 1024 chars', () => ({ machineType: 'gb200', labels: { team: long(1025) } }), ['labels.team']],
    ['an invalid label key', () => ({ machineType: 'gb200', labels: { 'bad key!': 'v' } }), ['labels']],
    ['65 labels', () => ({ machineType: 'gb200', labels: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])) }), ['labels']],
    ['an unknown field next to valid ones', () => ({ machineType: 'gb200', gpus: 8 }), ['gpus']],
    // Over the routes' default cap (functions/http/route.ts).
    [
      'a body over 256 KiB',
      () => ({ machineType: 'gb200', name: 'too-big', labels: { blob: long(DEFAULT_MAX_BODY_BYTES) } }),
      [],
      { status: 413, code: 'payload-too-large' },
    ],
    [
      'an Idempotency-Key over 255 chars on a valid body',
      () => ({ machineType: 'gb200' }),
      ['headers.idempotency-key'],
      { headers: { 'idempotency-key': long(256, 'k') } },
    ],
  ],
  'delete-instance': [
    ['issue category "CPU"', () => ({ machineHealthIssue: issue({ category: 'CPU' }) }), ['machineHealthIssue.category']],
    ['issue category of the wrong type', () => ({ machineHealthIssue: issue({ category: 7 }) }), ['machineHealthIssue.category']],
    ['an empty issue summary', () => ({ machineHealthIssue: issue({ summary: '' }) }), ['machineHealthIssue.summary']],
    ['an issue summary over 1024 chars', () => ({ machineHealthIssue: issue({ summary: long(1025) }) }), ['machineHealthIssue.summary']],
    ['issue details over 8192 chars', () => ({ machineHealthIssue: issue({ details: long(8193) }) }), ['machineHealthIssue.details']],
    ['an issue without summary', () => ({ machineHealthIssue: { category: 'NETWORK' } }), ['machineHealthIssue.summary']],
    ['an unknown issue field', () => ({ machineHealthIssue: issue({ severity: 'high' }) }), ['machineHealthIssue.severity']],
    ['isRepairTenant as a string', () => ({ isRepairTenant: 'yes' }), ['isRepairTenant']],
    ['an unknown field', () => ({ reason: 'done' }), ['reason']],
  ],
  'update-instance': [
    ['onlineRepair.enabled as a string', () => ({ onlineRepair: { enabled: 'yes' } }), ['onlineRepair.enabled']],
    ['onlineRepair with issue category "CPU"', () => ({ onlineRepair: { enabled: true, issue: issue({ category: 'CPU' }) } }), ['onlineRepair.issue.category']],
    ['a label value that is a number', () => ({ labels: { team: 5 } }), ['labels.team']],
    ['a label value over 1024 chars', () => ({ labels: { team: long(1025) } }), ['labels.team']],
    ['an unknown field', () => ({ status: 'Ready' }), ['status']],
  ],
  'release-instance': [
    ['issue category "CPU"', (v) => ({ id: v.instanceId, issue: issue({ category: 'CPU' }) }), ['issue.category']],
    ['an issue summary over 1024 chars', (v) => ({ id: v.instanceId, issue: issue({ summary: long(1025) }) }), ['issue.summary']],
    ['an id of the wrong type', () => ({ id: 5 }), ['id']],
    ['an id over 128 chars', () => ({ id: long(129) }), ['id']],
    ['no id', () => ({ issue: issue() }), ['id']],
  ],
  'update-machine': [
    ['no labels', () => ({}), ['labels']],
    ['an empty labels object', () => ({ labels: {} }), ['labels']],
    ['a label value that is a number', () => ({ labels: { repair_status: 5 } }), ['labels.repair_status']],
    ['an unknown field', () => ({ labels: { repair_status: 'InRepair' }, state: 'Ready' }), ['state']],
  ],
  'update-machine-labels': [
    ['no labels', () => ({}), ['labels']],
    ['an empty labels object', () => ({ labels: {} }), ['labels']],
    ['a label value over 1024 chars', () => ({ labels: { note: long(1025) } }), ['labels.note']],
    ['an invalid label key', () => ({ labels: { '-bad': 'v' } }), ['labels']],
  ],
  'create-meta-instance': [
    ['minNodes 0', () => ({ machineType: 'h100', minNodes: 0 }), ['minNodes']],
    ['minNodes 25', () => ({ machineType: 'h100', minNodes: 25 }), ['minNodes']],
    ['minNodes 1.5', () => ({ machineType: 'h100', minNodes: 1.5 }), ['minNodes']],
    ['minNodes as a string', () => ({ machineType: 'h100', minNodes: '2' }), ['minNodes']],
    ['no machineType', () => ({ minNodes: 1 }), ['machineType']],
    ['placement.sameRack as a string', () => ({ machineType: 'h100', placement: { sameRack: 'yes' } }), ['placement.sameRack']],
    ['duplicate machineIds', (v) => ({ machineType: 'gb200', machineIds: [v.machineId, v.machineId] }), ['machineIds']],
    ['an unknown field', () => ({ machineType: 'h100', priority: 1 }), ['priority']],
  ],
  'register-machines': [
    ['an empty list', () => ({ machines: [] }), ['machines']],
    ['machines that is not a list', () => ({ machines: 'gb200-x' }), ['machines']],
    ['an invalid machine id', () => ({ machines: [{ id: 'bad id!', machineType: 'gb200' }] }), ['machines.0.id']],
    ['a machine id over 128 chars', () => ({ machines: [{ id: long(129), machineType: 'gb200' }] }), ['machines.0.id']],
    ['machineType in upper case', () => ({ machines: [{ id: 'new-1', machineType: 'GB200' }] }), ['machines.0.machineType']],
    ['no machineType', () => ({ machines: [{ id: 'new-1' }] }), ['machines.0.machineType']],
    ['a rack over 64 chars', () => ({ machines: [{ id: 'new-1', machineType: 'gb200', rack: long(65) }] }), ['machines.0.rack']],
    [
      'duplicate ids',
      () => ({
        machines: [
          { id: 'new-1', machineType: 'gb200' },
          { id: 'new-1', machineType: 'gb200' },
        ],
      }),
      ['machines'],
    ],
    [
      'a valid machine followed by an invalid one (the valid one is not registered either)',
      () => ({
        machines: [
          { id: 'new-ok', machineType: 'gb200' },
          { id: 'new-2', machineType: 5 },
        ],
      }),
      ['machines.1.machineType'],
    ],
    ['a label value that is a number', () => ({ machines: [{ id: 'new-1', machineType: 'gb200', labels: { ok: 1 } }] }), ['machines.0.labels.ok']],
    ['an unknown machine field', () => ({ machines: [{ id: 'new-1', machineType: 'gb200', serial: 'x' }] }), ['machines.0.serial']],
    ['1001 machines', () => ({ machines: Array.from({ length: 1001 }, (_, i) => ({ id: `bulk-${i}`, machineType: 'gb200' })) }), ['machines']],
  ],
  'set-tenant-capabilities': [
    ['neither capabilities nor quotas', () => ({}), ['']],
    ['a negative quota', () => ({ quotas: { gb200: -1 } }), ['quotas.gb200']],
    ['a quota that is not a whole number', () => ({ quotas: { gb200: 1.5 } }), ['quotas.gb200']],
    ['capabilities that is not an object', () => ({ capabilities: true }), ['capabilities']],
    ['targetedInstanceCreation as a string', () => ({ capabilities: { targetedInstanceCreation: 'true' } }), ['capabilities.targetedInstanceCreation']],
    ['an unknown capability', () => ({ capabilities: { targetedInstanceCreation: true, superpowers: true } }), ['capabilities.superpowers']],
  ],
  'add-health-override': [
    ['an empty template', () => ({ template: '' }), ['template']],
    ['a template over 64 chars', () => ({ template: long(65) }), ['template']],
    ['mode "overwrite"', () => ({ template: 'degraded', mode: 'overwrite' }), ['mode']],
    ['an empty message', () => ({ template: 'degraded', message: '' }), ['message']],
    ['a message over 4096 chars', () => ({ template: 'degraded', message: long(4097) }), ['message']],
    ['an unknown field', () => ({ template: 'degraded', alerts: [] }), ['alerts']],
    ['an unknown template', () => ({ template: 'no-such-template' }), [], { code: 'unknown-template' }],
  ],
  'post-heartbeats': [
    ['no machines', () => ({}), ['machines']],
    ['machines that is not a list', () => ({ machines: 'all' }), ['machines']],
    ['bare ids instead of objects', (v) => ({ machines: [v.machineId] }), ['machines.0']],
    ['an id of the wrong type', () => ({ machines: [{ id: 5 }] }), ['machines.0.id']],
    ['an unknown machine field', (v) => ({ machines: [{ id: v.machineId, load: 1 }] }), ['machines.0.load']],
    ['a roster over its byte cap', () => ({ machines: [{ id: long(HEARTBEAT_MAX_BODY_BYTES, 'm') }] }), [], { status: 413, code: 'payload-too-large' }],
  ],
  'report-cleanup': [
    ['no ok', () => ({}), ['ok']],
    ['ok as a string', () => ({ ok: 'yes' }), ['ok']],
    ['a message over 4096 chars', () => ({ ok: true, message: long(4097) }), ['message']],
    ['an unknown field', () => ({ ok: true, instanceId: 'x' }), ['instanceId']],
  ],
  'list-instances': [
    ['status=Bogus', () => undefined, ['query.status'], { query: 'status=Bogus' }],
    ['limit=-1', () => undefined, ['query.limit'], { query: 'limit=-1' }],
    ['limit=1.5', () => undefined, ['query.limit'], { query: 'limit=1.5' }],
    ['an empty nextToken', () => undefined, ['query.nextToken'], { query: 'nextToken=' }],
    [
      'a nextToken issued by another listing',
      () => undefined,
      ['query.nextToken'],
      { query: (v) => `nextToken=${v.otherListingToken}`, code: 'invalid-page-token' },
    ],
    ['a nextToken over 2048 chars', () => undefined, ['query.nextToken'], { query: `nextToken=${long(3000, 'A')}` }],
  ],
  'list-meta-instances': [
    // A real token, but of the provider's machine listing: another index's key, never a start key for this query.
    [
      'a nextToken issued by another listing',
      () => undefined,
      ['query.nextToken'],
      { query: (v) => `nextToken=${v.otherListingToken}`, code: 'invalid-page-token' },
    ],
  ],
  'list-machines': [
    ['state=Broken', () => undefined, ['query.state'], { query: 'state=Broken' }],
    ['allocatable=yes', () => undefined, ['query.allocatable'], { query: 'allocatable=yes' }],
    ['machineType=GB200', () => undefined, ['query.machineType'], { query: 'machineType=GB200' }],
    ['an empty healthOverride', () => undefined, ['query.healthOverride'], { query: 'healthOverride=' }],
  ],
  'list-machines-for-repair': [['an empty healthOverride', () => undefined, ['query.healthOverride'], { query: 'healthOverride=' }]],
  'repair-stats': [
    ['days=0', () => undefined, ['query.days'], { query: 'days=0' }],
    ['days=91', () => undefined, ['query.days'], { query: 'days=91' }],
    ['days=1e1', () => undefined, ['query.days'], { query: 'days=1e1' }],
  ],
  'declare-maintenance': [
    ['a kind that is neither planned nor emergency', (v) => maintenance(v, { kind: 'routine' }), ['kind']],
    ['a scope that names nothing', (v) => maintenance(v, { scope: {} }), ['scope']],
    ['a handBackBy without its offset', (v) => maintenance(v, { handBackBy: '2030-01-01T00:00:00' }), ['handBackBy']],
    ['windowMinutes of 0', (v) => maintenance(v, { windowMinutes: 0 }), ['windowMinutes']],
  ],
  'list-maintenance': [['state=Paused', () => undefined, ['query.state'], { query: 'state=Paused' }]],
  'decide-maintenance-deferral': [['decision=maybe', () => ({ decision: 'maybe' }), ['decision']]],
  'hand-back-maintenance': [['no instance ids', () => ({ instanceIds: [] }), ['instanceIds']]],
};

export function specificCases(route: Route): Case[] {
  return (specific[route.operationId] ?? []).map(([name, body, errorPaths, options = {}]) => ({
    name,
    route,
    request: (v) => ({
      path: pathFor(route, v),
      body: body(v),
      ...(options.query !== undefined ? { query: typeof options.query === 'function' ? options.query(v) : options.query } : {}),
      ...(options.headers ? { headers: options.headers } : {}),
    }),
    status: options.status ?? 422,
    code: options.code ?? 'validation-failed',
    errorPaths,
  }));
}
