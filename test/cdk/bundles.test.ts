import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openApiDocument } from '#http/openapi.ts';
import { BUNDLED_OPENAPI_FILE } from '#http/openapi-served.ts';
import { routes } from '#http/routes/index.ts';
import { createTables } from '#local/tables.ts';
import { synthesizeBundles, type SynthesizedBundle } from '../../bench/bundles.ts';
import { httpEvent, invokeInFreshProcess, localEnvironment } from '../../bench/coldstart.ts';

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
  // Their size against the 600 KiB goal (BUNDLE_LIMIT_BYTES) is a bench figure: BENCH_ONLY=coldstart reports it.
  it('are one per kind of function, the API functions sharing one asset', () => {
    expect(bundles.map((b) => b.name)).toEqual(['TenantApi', 'AdminApi', 'SiteAgentApi', 'StreamHandler', 'SweepHandler']);
    expect(new Set(bundles.filter((b) => b.name.endsWith('Api')).map((b) => b.dir)).size).toBe(1);
  });

  it('ship the API its OpenAPI document beside the code, and nothing else but the source map', () => {
    expect(readdirSync(api().dir).sort()).toEqual(['index.mjs', 'index.mjs.map', BUNDLED_OPENAPI_FILE]);
    for (const bundle of bundles.filter((b) => !b.name.endsWith('Api'))) expect(readdirSync(bundle.dir).sort(), bundle.name).toEqual(['index.mjs', 'index.mjs.map']);
  });

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
