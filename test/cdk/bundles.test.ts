import { spawnSync } from 'node:child_process';
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
    for (const bundle of bundles) expect(bundle.bytes, bundle.name).toBeLessThanOrEqual(BUNDLE_LIMIT_BYTES);
  });

  it("set beside the bench's cold-start floor, which bundles with the same options and only reads DynamoDB once", async () => {
    const floor = synthesizeFloorBundle(join(outdir, 'floor'));
    const invocation = await invokeInFreshProcess(floor, localEnvironment(floor, inject('dynamoEndpoint'), names), {});
    expect(invocation.result).toEqual({ found: false });
    for (const bundle of bundles) expect(floor.bytes, bundle.name).toBeLessThan(bundle.bytes);
  }, 60_000);

  it('are one per kind of function, the API functions sharing one asset', () => {
    expect(bundles.map((b) => b.name)).toEqual(['TenantApi', 'AdminApi', 'SiteAgentApi', 'StreamHandler', 'SweepHandler']);
    expect(new Set(bundles.filter((b) => b.name.endsWith('Api')).map((b) => b.dir)).size).toBe(1);
  });

  it('ship the API its OpenAPI document beside the code, and nothing else but the source map and the license notices', () => {
    expect(readdirSync(api().dir).sort()).toEqual(['index.mjs', 'index.mjs.LEGAL.txt', 'index.mjs.map', BUNDLED_OPENAPI_FILE]);
    for (const bundle of bundles.filter((b) => !b.name.endsWith('Api'))) {
      expect(readdirSync(bundle.dir).sort(), bundle.name).toEqual(['index.mjs', 'index.mjs.LEGAL.txt', 'index.mjs.map']);
    }
  });

  it("leave the API's request, response and event schemas out of the stream and sweep bundles (building them costs a cold start ≈ 12 ms)", () => {
    const sourcesOf = (bundle: SynthesizedBundle) => (JSON.parse(readFileSync(`${bundle.file}.map`, 'utf8')) as { sources: string[] }).sources;
    const schemaModules = /functions\/domain\/(schemas|responses|event-schemas)\.ts$/;
    // The API validates with them: the pattern does name the modules as the source maps list them.
    expect(sourcesOf(api()).filter((source) => schemaModules.test(source)).map((source) => source.split('/').pop()).sort()).toEqual(['responses.ts', 'schemas.ts']);
    for (const bundle of bundles.filter((b) => !b.name.endsWith('Api'))) {
      expect(sourcesOf(bundle).filter((source) => schemaModules.test(source)), bundle.name).toEqual([]);
    }
  });

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

  it('answer a tenant from DynamoDB with credentials from the environment, as on Lambda', async () => {
    const path = '/v2/org/bundle-org/nico/instance';
    const answer = await invokeApi(path, { sub: 'bundle-tenant', org: 'bundle-org', roles: '[tenant]' });
    expect(answer.result).toMatchObject({ statusCode: 200, body: JSON.stringify({ items: [] }) });
  }, 30_000);
});
