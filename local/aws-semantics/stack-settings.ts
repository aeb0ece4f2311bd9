import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { defaultSiteConfig, type SiteConfig } from '#config/site-config.ts';
import { FUNCTION_NAMES, type FunctionName } from '#lib/lambda-functions.ts';

/**
 * What the local runner takes from the site's synthesized CloudFormation template rather than restating it: the
 * stream's event source mapping and each function's timeout. Synthesis (CDK's import included) takes about three
 * seconds, so the result is cached under node_modules/.cache, keyed by the site config and the sources the template
 * is made from (lib/ and functions/).
 */

export interface StackTemplate {
  Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
}

/** The stream function's AWS::Lambda::EventSourceMapping, as Lambda reads it (-1: no limit). */
export interface StreamMappingSettings {
  /** FilterCriteria.Filters[].Pattern: the JSON patterns as the template carries them. */
  filterPatterns: string[];
  batchSize: number;
  maximumRetryAttempts: number;
  maximumRecordAgeSeconds: number;
  bisectBatchOnFunctionError: boolean;
  parallelizationFactor: number;
}

export interface StackSettings {
  streamMapping: StreamMappingSettings;
  /** Each function's Timeout, in seconds. */
  functionTimeoutSeconds: Record<FunctionName, number>;
}

/** The settings in `template`; throws when it lacks what a site's stack always has. */
export function stackSettingsOf(template: StackTemplate): StackSettings {
  const resources = Object.entries(template.Resources);
  const functionIdOf = (name: FunctionName): string => {
    const pattern = new RegExp(`^${name}Function[0-9A-F]{8}$`);
    const found = resources.find(([id, resource]) => resource.Type === 'AWS::Lambda::Function' && pattern.test(id));
    if (!found) throw new Error(`the template has no function ${name}`);
    return found[0];
  };
  const functionTimeoutSeconds = Object.fromEntries(
    FUNCTION_NAMES.map((name) => [name, Number(template.Resources[functionIdOf(name)]!.Properties?.Timeout ?? 3)]),
  ) as Record<FunctionName, number>;
  const streamFunctionId = functionIdOf('StreamHandler');
  const mapping = resources
    .map(([, resource]) => resource)
    .find(
      (resource) => resource.Type === 'AWS::Lambda::EventSourceMapping' && (resource.Properties?.FunctionName as { Ref?: string })?.Ref === streamFunctionId,
    );
  if (!mapping?.Properties) throw new Error('the template has no event source mapping for the stream function');
  const p = mapping.Properties;
  const filters = ((p.FilterCriteria as { Filters?: Array<{ Pattern: string }> } | undefined)?.Filters ?? []).map((filter) => filter.Pattern);
  return {
    // Lambda's defaults for a DynamoDB stream where the template says nothing.
    streamMapping: {
      filterPatterns: filters,
      batchSize: Number(p.BatchSize ?? 100),
      maximumRetryAttempts: Number(p.MaximumRetryAttempts ?? -1),
      maximumRecordAgeSeconds: Number(p.MaximumRecordAgeInSeconds ?? -1),
      bisectBatchOnFunctionError: Boolean(p.BisectBatchOnFunctionError ?? false),
      parallelizationFactor: Number(p.ParallelizationFactor ?? 1),
    },
    functionTimeoutSeconds,
  };
}

const root = resolve(import.meta.dirname, '..', '..');

function sourcesDigest(dir: string, hash: ReturnType<typeof createHash>): void {
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) sourcesDigest(path, hash);
    else if (entry.name.endsWith('.ts')) hash.update(relative(root, path)).update(readFileSync(path));
  }
}

/** The cache key: the config, CDK's version and every source the template is made from. */
export function stackSettingsKey(config: SiteConfig): string {
  const hash = createHash('sha256').update(JSON.stringify(config));
  hash.update(JSON.parse(readFileSync(join(root, 'node_modules/aws-cdk-lib/package.json'), 'utf8')).version as string);
  for (const dir of ['lib', 'functions']) sourcesDigest(join(root, dir), hash);
  return hash.digest('hex').slice(0, 32);
}

export interface ReadStackSettings {
  settings: StackSettings;
  /** From the cache, or synthesized now, and how long getting them took. */
  source: 'cache' | 'synthesized';
  ms: number;
}

/** The settings of the stack a site running `config` would deploy: from the cache, or synthesized and cached. */
export async function readStackSettings(config: SiteConfig, cacheDir = join(root, 'node_modules/.cache/fleetward')): Promise<ReadStackSettings> {
  const startedAt = performance.now();
  const file = join(cacheDir, `stack-settings-${stackSettingsKey(config)}.json`);
  try {
    const settings = JSON.parse(readFileSync(file, 'utf8')) as StackSettings;
    return { settings, source: 'cache', ms: Math.round(performance.now() - startedAt) };
  } catch {
    // Not cached yet (or unreadable): synthesize.
  }
  const { synthesizeTemplate } = await import('./synthesize-stack.ts');
  const settings = stackSettingsOf(synthesizeTemplate(config));
  mkdirSync(cacheDir, { recursive: true });
  // Through a file of its own and a rename, so a reader never sees half of it (test workers share the cache).
  const partial = `${file}.${process.pid}.tmp`;
  writeFileSync(partial, JSON.stringify(settings));
  renameSync(partial, file);
  return { settings, source: 'synthesized', ms: Math.round(performance.now() - startedAt) };
}

/**
 * The stream's event source mapping as the stack deploys it. It is the same whatever the site config
 * (test/cdk/stack-settings.test.ts), so it is read from the default config's template: one synthesis per change of
 * the sources, shared by every site the tests start.
 */
export async function readStreamMapping(cacheDir?: string): Promise<ReadStackSettings> {
  return readStackSettings(defaultSiteConfig(), cacheDir);
}
