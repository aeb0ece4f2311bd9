import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dueTimes } from '#reconcilers/due-times.ts';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openApiDocument } from '#http/openapi.ts';
import { BUNDLED_OPENAPI_FILE } from '#http/openapi-served.ts';
import { routes } from '#http/routes/index.ts';
import { createTables } from '#local/tables.ts';
import { synthesizeBundles, synthesizeFloorBundle, type SynthesizedBundle } from '../../bench/bundles.ts';
import { httpEvent, invokeInFreshProcess, localEnvironment } from '../../bench/coldstart.ts';
import { BUNDLE_LIMIT_BYTES } from '#lib/fleetward-function.ts';
import { apiRouteSpecs, ROUTE_GROUPS, routeKeyOf } from '#lib/api-routes.ts';
import { API_FUNCTION_OF } from '#lib/lambda-functions.ts';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { keys } from '#store/keys.ts';
import { demoFleet } from '#local/site-agent/demo-fleet.ts';
import { createSiteSimulator } from '#local/site-agent/simulator.ts';
import { createDocumentClient } from '#store/client.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { aMachine, anInstance } from '#test/support/fixtures.ts';
import { startSecretsManagerStandIn } from '#test/support/secrets-manager-stand-in.ts';

// The one synthesis WITH bundling (the local esbuild, as `cdk deploy` runs it): what Lambda would receive.
// Every other CDK test skips bundling. The cold-start figures are the bench's (`BENCH_ONLY=coldstart`).
let outdir: string;
let bundles: SynthesizedBundle[];
const names = { table: `bundles-${process.pid}`, idempotencyTable: `bundles-${process.pid}-idempotency` };

beforeAll(async () => {
  outdir = mkdtempSync(join(tmpdir(), 'fleetward-bundles-'));
  bundles = synthesizeBundles(outdir);
  await createTables(inject('dynamoEndpoint'), names);
}, 180_000);

afterAll(() => {
  if (outdir) rmSync(outdir, { recursive: true, force: true });
});

const api = () => bundles.find((b) => b.name === 'TenantApi')!;
const invokeApi = (path: string, claims?: Record<string, string>) =>
  invokeInFreshProcess(api(), localEnvironment(api(), inject('dynamoEndpoint'), names), httpEvent('GET', path, path, claims));

describe('the deployed bundles', () => {
  // A byte count, not a timing: it holds on any host. The cold-start figures are the bench's.
  it('are each at most 600 KB minified', () => {
    const room = (bundle: SynthesizedBundle) => `${bundle.name} ${bundle.bytes} bytes (${BUNDLE_LIMIT_BYTES - bundle.bytes} to spare)`;
    console.info(`bundles: ${bundles.map(room).join(', ')}`);
    for (const bundle of bundles) expect(bundle.bytes, bundle.name).toBeLessThanOrEqual(BUNDLE_LIMIT_BYTES);
  });

  it("set beside the bench's cold-start floor, which bundles with the same options and only reads DynamoDB once", async () => {
    const floor = synthesizeFloorBundle(join(outdir, 'floor'));
    const invocation = await invokeInFreshProcess(floor, localEnvironment(floor, inject('dynamoEndpoint'), names), {});
    expect(invocation.result).toEqual({ found: false });
    for (const bundle of bundles) expect(floor.bytes, bundle.name).toBeLessThan(bundle.bytes);
  }, 60_000);

  it('are one per function, each API function with an asset of its own', () => {
    expect(bundles.map((b) => b.name)).toEqual(['TenantApi', 'AdminApi', 'SiteAgentApi', 'StreamHandler', 'SweepHandler']);
    expect(new Set(bundles.map((b) => b.dir)).size).toBe(bundles.length);
  });

  it("serve each API function's own route group and no other route, as the stack wires them", () => {
    // Every route of the table, asked of each API bundle in one fresh process without a token: a route the bundle
    // holds answers (401, or 200 for the public document); any other is unknown to it (404 route-not-found).
    const routeKeys = apiRouteSpecs().map(routeKeyOf);
    for (const group of ROUTE_GROUPS) {
      const bundle = bundles.find((b) => b.name === API_FUNCTION_OF[group])!;
      const script = `const { handler } = await import(${JSON.stringify(`file://${bundle.file}`)});
        const held = [];
        for (const key of ${JSON.stringify(routeKeys)}) {
          const [method, path] = key.split(' ');
          const event = { version: '2.0', routeKey: key, rawPath: path, rawQueryString: '', headers: {}, isBase64Encoded: false,
            requestContext: { requestId: key, routeKey: key, stage: '$default', timeEpoch: Date.now(), http: { method, path, sourceIp: '127.0.0.1' } } };
          const answer = await handler(event, { awsRequestId: key, getRemainingTimeInMillis: () => 10000 });
          if (!(answer.statusCode === 404 && JSON.parse(answer.body).code === 'route-not-found')) held.push(key);
        }
        process.stdout.write(JSON.stringify(held));
        process.exit(0);`;
      const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        env: { PATH: process.env.PATH ?? '', ...localEnvironment(bundle, inject('dynamoEndpoint'), names) },
        encoding: 'utf8',
      });
      const held = (JSON.parse(child.stdout.slice(child.stdout.lastIndexOf('['))) as string[]).sort();
      const wired = apiRouteSpecs()
        .filter((route) => route.group === group)
        .map(routeKeyOf)
        .sort();
      expect(wired.length, group).toBeGreaterThan(0);
      expect(held, bundle.name).toEqual(wired);
    }
  }, 60_000);

  it('ship the API its OpenAPI document beside the code, and nothing else but the source map and the license notices', () => {
    expect(readdirSync(api().dir).sort()).toEqual(['index.mjs', 'index.mjs.LEGAL.txt', 'index.mjs.map', BUNDLED_OPENAPI_FILE]);
    for (const bundle of bundles.filter((b) => !b.name.endsWith('Api'))) {
      expect(readdirSync(bundle.dir).sort(), bundle.name).toEqual(['index.mjs', 'index.mjs.LEGAL.txt', 'index.mjs.map']);
    }
  });

  it("leave the API's request, response and event schemas out of the stream and sweep bundles (building them costs a cold start ≈ 12 ms)", () => {
    const sourcesOf = (bundle: SynthesizedBundle) => (JSON.parse(readFileSync(`${bundle.file}.map`, 'utf8')) as { sources: string[] }).sources;
    const schemaModules = /functions\/domain\/(core\/schemas|core\/responses|events\/event-schemas)\.ts$/;
    // The API validates with them: the pattern does name the modules as the source maps list them.
    expect(
      sourcesOf(api())
        .filter((source) => schemaModules.test(source))
        .map((source) => source.split('/').pop())
        .sort(),
    ).toEqual(['responses.ts', 'schemas.ts']);
    for (const bundle of bundles.filter((b) => !b.name.endsWith('Api'))) {
      expect(
        sourcesOf(bundle).filter((source) => schemaModules.test(source)),
        bundle.name,
      ).toEqual([]);
    }
  });

  it('carry the site agent client and the Secrets Manager client of its signing keys in the stream and sweep bundles only', () => {
    const sourcesOf = (bundle: SynthesizedBundle) => (JSON.parse(readFileSync(`${bundle.file}.map`, 'utf8')) as { sources: string[] }).sources;
    const agentModules = (bundle: SynthesizedBundle) =>
      [
        sourcesOf(bundle).some((source) => source.endsWith('functions/site/agent-client.ts')) && 'agent client',
        sourcesOf(bundle).some((source) => source.endsWith('functions/site/request-signing.ts')) && 'request signing',
        sourcesOf(bundle).some((source) => source.includes('/@aws-sdk/client-secrets-manager/')) && 'Secrets Manager client',
      ].filter(Boolean);
    // The API never calls the agent (contextFromEnv gets no `agent` there): it stays under the size bound with room.
    expect(agentModules(api()), 'TenantApi').toEqual([]);
    for (const bundle of bundles.filter((b) => !b.name.endsWith('Api'))) {
      expect(agentModules(bundle), bundle.name).toEqual(['agent client', 'request signing', 'Secrets Manager client']);
    }
  });

  it('call the site agent from the stream bundle, signed with the keys its Secrets Manager secret holds', async () => {
    // A Provisioning instance whose create is still to be sent, as the API leaves it; the bundled stream function gets
    // its record, claims the create and sends it to a simulated agent that takes only calls signed with its key.
    const tables = { table: `bundles-agent-${process.pid}`, idempotencyTable: `bundles-agent-${process.pid}-idempotency` };
    await createTables(inject('dynamoEndpoint'), tables);
    const documents = createDocumentClient(inject('dynamoEndpoint'));
    const store = new DynamoFleetStore(documents, tables.table, dueTimes);
    const [machine] = demoFleet([{ type: 'gb200', count: 1, racks: 1 }]);
    const instance = anInstance({ id: 'i-signed', name: 'signed', machineId: machine!.id, creation: { clientToken: 'tok-signed', phase: 'pending' } });
    await store.commit({
      machines: [{ before: null, after: aMachine({ id: machine!.id, rack: machine!.rack, state: 'Assigned', instanceId: instance.id }) }],
      instances: [{ before: null, after: instance }],
      history: [],
    });
    const key = { id: 'bundle-key', secret: randomBytes(32).toString('hex') };
    const agent = createSiteSimulator({
      machines: [machine!],
      controllerUrl: () => 'http://127.0.0.1:9',
      token: async () => 'unused',
      signingKeys: [key],
      heartbeatIntervalMs: 3_600_000,
      provisionMs: 0,
      cleanupMs: 0,
    });
    await agent.start();
    const secrets = await startSecretsManagerStandIn(JSON.stringify({ keys: [key], current: key.id }));
    try {
      const { Item } = await documents.send(new GetCommand({ TableName: tables.table, Key: keys.instance(instance.id), ConsistentRead: true }));
      const image = (item: Record<string, unknown>) =>
        marshall(item, { removeUndefinedValues: true }) as NonNullable<DynamoDBStreamEvent['Records'][0]['dynamodb']>['NewImage'];
      const event: DynamoDBStreamEvent = {
        Records: [
          {
            eventID: '1',
            eventName: 'INSERT',
            eventSource: 'aws:dynamodb',
            awsRegion: 'us-east-1',
            dynamodb: { Keys: image(keys.instance(instance.id)), NewImage: image(Item!), StreamViewType: 'NEW_AND_OLD_IMAGES' },
          },
        ],
      };
      const stream = bundles.find((b) => b.name === 'StreamHandler')!;
      const environment = {
        ...localEnvironment(stream, inject('dynamoEndpoint'), tables),
        SITE_AGENT_URL: agent.url,
        AWS_ENDPOINT_URL_SECRETS_MANAGER: secrets.url,
      };
      const invocation = await invokeInFreshProcess(stream, environment, event);
      expect(invocation.result).toEqual({ batchItemFailures: [] });
      expect(secrets.asked).toEqual([{ target: 'secretsmanager.GetSecretValue', body: { SecretId: stream.environment.SITE_AGENT_SIGNING_SECRET_ARN } }]);
      const seen = (await agent.control('GET', '/_sim/requests', undefined))!.body as { items: Array<{ instanceId: string; outcome: unknown }> };
      expect(seen.items.map((request) => [request.instanceId, request.outcome])).toEqual([[instance.id, 201]]);
      expect(await store.getInstance(instance.id)).toMatchObject({ status: 'Ready', createAttempts: 1, siteName: 'signed' });
    } finally {
      await secrets.close();
      await agent.stop();
    }
  }, 60_000);

  it('map their stack traces to the TypeScript sources, without NODE_OPTIONS=--enable-source-maps', () => {
    expect(api().environment.NODE_OPTIONS).toBeUndefined();
    // An event without a request context fails inside the API handler, in functions/http/api-handler.ts.
    const script = `const { handler } = await import(${JSON.stringify(`file://${api().file}`)});
      try { await handler(null, { awsRequestId: 'stack', getRemainingTimeInMillis: () => 10000 }); } catch (error) { process.stdout.write(error.stack); }`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      env: { PATH: process.env.PATH ?? '', ...localEnvironment(api(), inject('dynamoEndpoint'), names) },
      encoding: 'utf8',
    });
    expect(child.stdout).toMatch(/^TypeError: /);
    // The source's path relative to the directory esbuild wrote the bundle to, less its leading `../`.
    expect(child.stdout).toMatch(/\n {4}at .*\((\S+\/)?functions\/http\/api-handler\.ts:\d+:\d+\)/);
    expect(child.stdout).not.toContain('index.mjs:');
  }, 30_000);

  it('serve /openapi.json identical to the document the route table generates', async () => {
    const answer = await invokeApi('/openapi.json');
    const result = answer.result as { statusCode: number; body: string };
    expect(result.statusCode).toBe(200);
    expect(JSON.parse(result.body)).toEqual(JSON.parse(JSON.stringify(openApiDocument(routes))));
  }, 30_000);

  it("remember an answer by its Idempotency-Key and refuse the key with another body (Powertools' key paths, on the field-path stand-in)", async () => {
    const admin = bundles.find((b) => b.name === 'AdminApi')!;
    const put = (key: string, targetedInstanceCreation: boolean) => {
      const event = httpEvent('PUT', '/admin/tenants/{org}', '/admin/tenants/bundle-org', { sub: 'bundle-admin', org: 'provider', roles: '[provider-admin]' });
      const headers = { ...event.headers, 'content-type': 'application/json', 'idempotency-key': key };
      const body = JSON.stringify({ capabilities: { targetedInstanceCreation } });
      return invokeInFreshProcess(admin, localEnvironment(admin, inject('dynamoEndpoint'), names), {
        ...event,
        headers,
        body,
        pathParameters: { org: 'bundle-org' },
      });
    };
    const first = (await put('bundle-key-1', true)).result as { statusCode: number; body: string };
    expect(first.statusCode).toBe(200);
    expect((await put('bundle-key-1', true)).result).toMatchObject({ statusCode: 200, body: first.body });
    const reused = (await put('bundle-key-1', false)).result as { statusCode: number; body: string };
    expect([reused.statusCode, JSON.parse(reused.body).code]).toEqual([422, 'idempotency-key-reused']);
    expect((await put('bundle-key-2', false)).result).toMatchObject({ statusCode: 200 });
  }, 60_000);

  it('answer a tenant from DynamoDB with credentials from the environment, as on Lambda', async () => {
    const path = '/v2/org/bundle-org/nico/instance';
    const answer = await invokeApi(path, { sub: 'bundle-tenant', org: 'bundle-org', roles: '[tenant]' });
    expect(answer.result).toMatchObject({ statusCode: 200, body: JSON.stringify({ items: [] }) });
  }, 30_000);
});
