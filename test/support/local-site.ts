import { randomUUID } from 'node:crypto';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { expect, inject } from 'vitest';
import { parseSiteConfig, type SiteConfig } from '#config/site-config.ts';
import type { Role } from '#domain/core/model.ts';
import type { Route } from '#http/route.ts';
import { textLines } from '#local/log-sink.ts';
import { startLocalSite, type LocalSite, type LocalSiteOptions } from '#local/runner.ts';
import { unacceptable } from '#local/server-errors.ts';
import { isThrottled } from '#store/throttle.ts';
import { reconcilerRunMs, sweepWithinMs } from './bounds.ts';
import { nextSweepDone } from './next-sweep.ts';
import { consistentScan, outboxFaults, watchInvariants } from './site-invariants.ts';

/** A site config for tests: the demo fleet made small and the simulator fast. */
export function testConfig(toml = ''): SiteConfig {
  return parseSiteConfig(
    toml ||
      `
[instance_create_retry]
base_delay_ms = 10
timeout_ms = 2000
[simulator]
machines = [ { type = "gb200", count = 4, racks = 2 }, { type = "h100", count = 2, racks = 1 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 20
cleanup_ms = 20
validation_ms = 20
`,
  );
}

/**
 * How often a test site sweeps unless told otherwise. Every sweep reads each due shard and each org-capacity shard, a
 * Query each (some 160, whatever the fleet), which DynamoDB Local serves at milliseconds of CPU apiece: at 500 ms an
 * idle test site kept a core busy, and the e2e tiers, bound by two cores, ran a quarter slower than at 2 s.
 */
export const TEST_SWEEP_INTERVAL_MS = 2_000;

export interface TestSite extends LocalSite {
  /** Every line the site logged so far (the controller's are Powertools JSON). */
  logLines: string[];
  /** The site's config and the interval of its sweeps: what a test derives its bounds from (bounds.ts). */
  config: SiteConfig;
  sweepIntervalMs: number;
  /**
   * Resolves once a sweep that began after this call has finished and the stream has handled what it wrote: whatever
   * the site would still do about the state the call found, it has done. A test that shows that an action changed
   * nothing waits for this after the action.
   */
  afterNextSweep(): Promise<void>;
  /**
   * Resolves once the indexes show every write made before the call: at once on DynamoDB Local, after
   * FLEETWARD_INDEX_LAG_MS under `index-lag`. A test that counts through a list that nothing more was written waits
   * for this first, as a list read at once may not show a write yet (docs/api.md).
   */
  indexesCaughtUp(): Promise<void>;
  token(org: string, roles: Role[], sub?: string): Promise<string>;
  call(
    method: string,
    path: string,
    options?: { token?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<{ status: number; body: any; headers: Headers }>;
  /** Polls until `check` returns a truthy value (or throws after `timeoutMs`). */
  eventually<T>(check: () => Promise<T | undefined | null | false>, timeoutMs?: number): Promise<T>;
}

/**
 * A whole local site on the test run's DynamoDB Local, with its own tables and ports. Its `stop()` fails the test on
 * what no client may ever see: a 5xx other than 503 with Retry-After, an outbox event not delivered once settled, and
 * (sampled while it runs, when AWS's semantics are on or `watchInvariants` says so) a break of the site's safety rules.
 */
export async function startTestSite(overrides: Partial<LocalSiteOptions> & { watchInvariants?: boolean; breaksItsDatabase?: boolean } = {}): Promise<TestSite> {
  const { watchInvariants: watch, breaksItsDatabase, ...siteOverrides } = overrides;
  const id = randomUUID().slice(0, 8);
  const lines: string[] = [];
  const streamChaos = inject('streamChaos');
  const awsSemantics = inject('awsSemantics');
  const config = overrides.config ?? testConfig();
  const sweepIntervalMs = overrides.sweepIntervalMs ?? TEST_SWEEP_INTERVAL_MS;
  const site = await startLocalSite({
    config,
    port: 0,
    dynamoEndpoint: inject('dynamoEndpoint'),
    tableNames: { table: `e2e-${id}`, idempotencyTable: `e2e-${id}-idempotency` },
    sweepIntervalMs,
    ...(streamChaos ? { streamChaos } : {}),
    ...(awsSemantics ? { awsSemantics } : {}),
    awsCallLogDir: inject('awsCallLogDir'),
    log: textLines((line) => {
      lines.push(line);
      if (process.env.FLEETWARD_TEST_LOG) console.log(line);
    }),
    ...siteOverrides,
  });
  const invariants =
    (watch ?? (siteOverrides.awsSemantics ?? awsSemantics) != null) ? watchInvariants(inject('dynamoEndpoint'), site.tableNames.table, config) : undefined;
  const indexesCaughtUp = async () => {
    const semantics = siteOverrides.awsSemantics ?? awsSemantics;
    if (semantics?.modes.includes('index-lag')) await new Promise((resolve) => setTimeout(resolve, semantics.indexLagMs));
  };
  if (overrides.registerFleet ?? true) {
    if (config.validation.after.includes('registration')) await commissioned(site, fleetSize(config));
    // A test starts from indexes that show the fleet: a create at once reads the allocatable index.
    await indexesCaughtUp();
  }
  const call: TestSite['call'] = async (method, path, options = {}) => {
    const response = await fetch(`${site.url}${path}`, {
      method,
      headers: {
        ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
        ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...options.headers,
      },
      ...(options.body !== undefined ? { body: typeof options.body === 'string' ? options.body : JSON.stringify(options.body) } : {}),
    });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      // keep the text
    }
    return { status: response.status, body, headers: response.headers };
  };
  const eventually: TestSite['eventually'] = async (check, timeoutMs = 10_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await check();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; last log lines:\n${lines.slice(-15).join('\n')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  return {
    ...site,
    // Every record a test produced has met the stack's stream filters: the filters must pass exactly those the
    // stream handler acts on, or a reaction would be lost in AWS (or a function invoked for nothing).
    stop: async () => {
      const violations = (await invariants?.stop()) ?? [];
      const undelivered = siteOverrides.streamPoller === false ? [] : await settledOutboxFaults(site, config);
      await site.stop();
      expect(site.streamFilterDisagreements(), 'records on which the stack stream filters and the stream handler disagree').toEqual([]);
      // A test that stops DynamoDB under the site sees the 500s a site without its database gives.
      if (!breaksItsDatabase) expect(unacceptable(site.serverErrors()), 'answers no client may get: a 5xx but 503 with Retry-After').toEqual([]);
      expect(violations, 'safety rules broken while the site ran').toEqual([]);
      expect(undelivered, `outbox events not delivered once per id; the stream: ${streamTrace(site, lines)}`).toEqual([]);
    },
    logLines: lines,
    config,
    sweepIntervalMs,
    async afterNextSweep() {
      await nextSweepDone(site.counters, sweepWithinMs(config, sweepIntervalMs));
      await site.streamIdle(reconcilerRunMs(config));
    },
    indexesCaughtUp,
    token: (org, roles, sub = `${org}-user`) => site.issuer.mint({ sub, org, roles }),
    call,
    eventually,
  };
}

const fleetSize = (config: SiteConfig): number => config.simulator.machines.reduce((sum, group) => sum + group.count, 0);

/**
 * Site ready: the seeded fleet has passed its first validation (commissioning, docs/api.md "Validation"), so a test
 * starts from a fleet the site allocates from, as it did before validation after registration existed. The listing
 * reads an index, which under `index-lag` shows the machines registered a moment ago a moment late: the whole fleet
 * must be listed before none running means none commissioning.
 */
async function commissioned(site: LocalSite, machines: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const census = async () => {
    let listed = 0;
    let running = 0;
    let nextToken: string | undefined;
    do {
      const page = await site.ctx.store.listMachines({ limit: 1000, ...(nextToken ? { nextToken } : {}) });
      listed += page.items.length;
      running += page.items.filter((m) => m.validation?.state === 'running').length;
      nextToken = page.nextToken;
    } while (nextToken);
    return { listed, running };
  };
  for (;;) {
    // Under AWS's throttles (FLEETWARD_AWS_SEMANTICS), a read of the listing may be throttled: it is read again.
    const { listed, running } = await census().catch((error: unknown) => {
      if (isThrottled(error)) return { listed: 0, running: 0 };
      throw error;
    });
    if (listed >= machines && running === 0) return;
    if (Date.now() > deadline) throw new Error(`${running} of ${listed} listed machines (of ${machines}) still commissioning after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Real values for a route's `{param}` segments, chosen by the param's name and the segment before it. */
export interface PathValues {
  org: string;
  instanceId: string;
  machineId: string;
  metaInstanceId?: string;
  maintenanceId?: string;
  /** Exact values by param name; they win over everything else (e.g. a deliberately invalid `{source}`). */
  params?: Record<string, string>;
  /** For params the helper does not know (a route added later): auth is decided before params are read. */
  fallback?: string;
}

export function routePath(route: Pick<Route, 'path'>, values: PathValues): string {
  const segments = route.path.split('/');
  return segments
    .map((segment, i) => {
      const param = /^\{([A-Za-z0-9_]+)\+?\}$/.exec(segment)?.[1];
      if (!param) return segment;
      const before = segments[i - 1] ?? '';
      let value: string;
      if (values.params?.[param] !== undefined) value = values.params[param];
      else if (param === 'org') value = values.org;
      else if (param === 'machineId' || (param === 'id' && /^machines?$/.test(before))) value = values.machineId;
      else if (param === 'instanceId' || (param === 'id' && /^instances?$/.test(before))) value = values.instanceId;
      else if (param === 'id' && /^meta-instances?$/.test(before)) value = values.metaInstanceId ?? values.fallback ?? 'unknown-meta-instance';
      else if (param === 'id' && before === 'maintenance') value = values.maintenanceId ?? values.fallback ?? 'unknown-maintenance';
      else if (param === 'source') value = 'tenant-reported-issue';
      else value = values.fallback ?? `unknown-${param}`;
      return encodeURIComponent(value);
    })
    .join('/');
}

/** An RFC 9457 problem answer as API.md "Conventions" describes it. */
export function expectProblem(response: { status: number; body: any; headers: Headers }, status: number, code?: string): void {
  const context = `${status}${code ? ` ${code}` : ''} expected, got ${response.status} ${JSON.stringify(response.body)}`;
  expect(response.status, context).toBe(status);
  expect(response.headers.get('content-type'), context).toMatch(/^application\/problem\+json/);
  expect(response.body, context).toMatchObject({
    type: expect.any(String),
    title: expect.any(String),
    status,
    detail: expect.any(String),
    code: code ?? expect.any(String),
  });
  expect(response.body.code, context).not.toBe('');
}

/**
 * What API Gateway answers by itself (docs/api.md "Errors from the gateway"): an unknown route or method is 404
 * `{"message":"Not Found"}`; a protected route without a token the JWT authorizer accepts is 401
 * `{"message":"Unauthorized"}` with its challenge, `Bearer` for no token, `invalid_token` for a refused one.
 */
export function expectGatewayAnswer(response: { status: number; body: any; headers: Headers }, status: 401 | 404, token?: 'missing' | 'invalid'): void {
  const context = `API Gateway's ${status} expected, got ${response.status} ${JSON.stringify(response.body)}`;
  expect(response.status, context).toBe(status);
  expect(response.headers.get('content-type'), context).toBe('application/json');
  expect(response.body, context).toEqual({ message: status === 401 ? 'Unauthorized' : 'Not Found' });
  expect(response.headers.get('apigw-requestid'), context).toEqual(expect.any(String));
  const challenge = { missing: 'Bearer', invalid: 'Bearer scope="" error="invalid_token"' };
  expect(response.headers.get('www-authenticate'), context).toBe(status === 401 ? challenge[token ?? 'missing'] : null);
}

/** Every item of one of the site's tables (a Scan: fine in tests, never on a product path). */
export async function scanTable(site: LocalSite, which: 'table' | 'idempotencyTable' = 'table'): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await site.storeClient.send(
      new ScanCommand({ TableName: site.tableNames[which], ConsistentRead: true, ...(start ? { ExclusiveStartKey: start } : {}) }),
    );
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

export const routeKey = (route: Pick<Route, 'method' | 'path'>): string => `${route.method} ${route.path}`;

/** What the stream poller counted, and its own log lines, for a test that finds an event undelivered. */
function streamTrace(site: LocalSite, lines: readonly string[]): string {
  const { streamBatches, streamRecords, streamFailureDestination } = site.counters();
  const own = lines.filter((line) => line.includes('stream-poller')).slice(-10);
  return JSON.stringify({ streamBatches, streamRecords, streamFailureDestination }) + own.map((line) => `\n${line}`).join('');
}

/**
 * Once the stream has caught up, every outbox entry has gone out. The site still runs while it is judged, so an
 * agent's report or a sweep may commit an event just after the stream went idle: that one is late, not lost, so a
 * fault counts only if it outlasts the stream going idle a second time. A site run without its stream, or whose
 * stream is stalled, is past judging here: its own test says what it expects.
 */
async function settledOutboxFaults(site: LocalSite, config: SiteConfig): Promise<string[]> {
  const look = async () => {
    await site.streamIdle(reconcilerRunMs(config));
    return outboxFaults(await consistentScan(site.storeClient, site.tableNames.table), site.events.delivered);
  };
  try {
    const first = await look();
    if (first.length === 0) return first;
    const again = new Set(await look());
    return first.filter((fault) => again.has(fault));
  } catch {
    return [];
  }
}
