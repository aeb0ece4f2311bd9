// Synthesizes a site's stack WITH bundling (the local esbuild, no Docker) and lists the functions it deploys:
// where each one's bundle landed in the cloud assembly and the environment the template gives it. Used by the
// `coldstart` bench part and by test/cdk/bundles.test.ts.

import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { App, Duration, Stack } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { buildSiteApp } from '#lib/app.ts';
import { FleetwardFunction } from '#lib/fleetward-function.ts';
import cdkJson from '../cdk.json' with { type: 'json' };

export interface SynthesizedBundle {
  /** The construct id under the stack: TenantApi, AdminApi, SiteAgentApi, StreamHandler, SweepHandler. */
  name: string;
  /** The asset directory (shared by functions with identical bundles). */
  dir: string;
  /** The ES module Lambda loads (`index.mjs`), and its size in bytes. */
  file: string;
  bytes: number;
  /** The template's environment variables: literals as they are, CloudFormation references as `undefined`. */
  environment: Record<string, string | undefined>;
}

type TemplateFunction = {
  Properties: { Handler?: string; Code: { S3Key?: unknown }; Environment?: { Variables?: Record<string, unknown> } };
};
type AssetManifest = { files: Record<string, { source: { path: string } }> };

/** Synthesizes `site` into `outdir` with every function bundled for real; the stack's own functions only. */
export function synthesizeBundles(outdir: string, site = 'example-aws'): SynthesizedBundle[] {
  const built = buildSiteApp({ site, appProps: { outdir, context: cdkJson.context } });
  built.app.synth();
  return bundlesOf(outdir, built.stack, [...Object.values(built.stack.apiFunctions), built.stack.streamFunction, built.stack.sweepFunction]);
}

/**
 * The cold start floor (bench/coldstart-floor-handler.ts) as the stack bundles a function: a FleetwardFunction of a
 * stack of its own, synthesized into `outdir`, so that it differs from the stack's bundles by its code alone.
 */
export function synthesizeFloorBundle(outdir: string): SynthesizedBundle {
  const app = new App({ outdir });
  const stack = new Stack(app, 'ColdstartFloor');
  const floor = new FleetwardFunction(stack, 'Floor', {
    entry: join(import.meta.dirname, 'coldstart-floor-handler.ts'),
    description: 'cold start floor: one GetItem through the bare SDK',
    environment: {},
    timeout: Duration.seconds(10),
    logRetention: RetentionDays.ONE_DAY,
  });
  app.synth();
  return bundlesOf(outdir, stack, [floor])[0]!;
}

/** Where each function's bundle landed in the assembly at `outdir`, and the environment its template gives it. */
function bundlesOf(outdir: string, stack: Stack, functions: FleetwardFunction[]): SynthesizedBundle[] {
  const read = (file: string) => JSON.parse(readFileSync(join(outdir, file), 'utf8')) as unknown;
  const template = read(`${stack.artifactId}.template.json`) as { Resources: Record<string, TemplateFunction> };
  // The code's S3 key is `<asset hash>.zip`; the asset manifest says which directory of the assembly holds it.
  const assets = (read(`${stack.artifactId}.assets.json`) as AssetManifest).files;
  return functions.map((construct) => {
    const logicalId = stack.getLogicalId(construct.function.node.defaultChild as never);
    const resource = template.Resources[logicalId]!;
    const hash = String(resource.Properties.Code.S3Key).replace(/\.zip$/, '');
    const asset = assets[hash];
    if (!asset) throw new Error(`${construct.node.id}: no asset ${hash} in the assembly`);
    const dir = join(outdir, asset.source.path);
    const [module] = (resource.Properties.Handler ?? 'index.handler').split('.');
    const file = join(dir, `${module}.mjs`);
    const variables = resource.Properties.Environment?.Variables ?? {};
    return {
      name: construct.node.id,
      dir,
      file,
      bytes: statSync(file).size,
      environment: Object.fromEntries(Object.entries(variables).map(([key, value]) => [key, typeof value === 'string' ? value : undefined])),
    };
  });
}
