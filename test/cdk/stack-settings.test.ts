import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultSiteConfig } from '#config/site-config.ts';
import { functionTimeoutSeconds } from '#lib/function-timeouts.ts';
import { FUNCTION_NAMES } from '#lib/lambda-functions.ts';
import { streamFilters } from '#lib/stream-filters.ts';
import { STREAM_BATCH_SIZE } from '#lib/stream-reactions.ts';
import { readStackSettings, readStreamMapping } from '#local/aws-semantics/stack-settings.ts';

// The local runner's reading of the synthesized template (FLEETWARD_AWS_SEMANTICS parallel-shards and
// lambda-timeouts): what the stack deploys, not a copy of it, cached per config and sources.

const cacheDir = mkdtempSync(join(tmpdir(), 'fleetward-stack-settings-'));
afterAll(() => rmSync(cacheDir, { recursive: true, force: true }));

describe('the stack settings the local runner reads', () => {
  it("are the template's stream mapping and function timeouts, synthesized once and then read from the cache", async () => {
    const config = defaultSiteConfig();
    const first = await readStackSettings(config, cacheDir);
    expect(first.source).toBe('synthesized');
    expect(first.settings.streamMapping).toEqual({
      filterPatterns: streamFilters().map((filter) => filter.pattern),
      batchSize: STREAM_BATCH_SIZE,
      maximumRetryAttempts: 10,
      maximumRecordAgeSeconds: 3600,
      bisectBatchOnFunctionError: true,
      parallelizationFactor: 1,
    });
    expect(first.settings.functionTimeoutSeconds).toEqual(Object.fromEntries(FUNCTION_NAMES.map((name) => [name, functionTimeoutSeconds(name, config)])));

    const again = await readStackSettings(config, cacheDir);
    expect(again).toMatchObject({ source: 'cache', settings: first.settings });
    console.log(`stack settings: synthesized in ${first.ms} ms, read from the cache in ${again.ms} ms`);
  }, 120_000);

  it('are synthesized again for another site config, whose stream mapping is the same (read from the default one)', async () => {
    const config = defaultSiteConfig();
    config.instance_create_retry.max_attempts += 5;
    config.sweep.interval_seconds *= 2;
    const other = await readStackSettings(config, cacheDir);
    expect(other.source).toBe('synthesized');
    const mapping = await readStreamMapping(cacheDir);
    expect(mapping.source).toBe('cache');
    expect(other.settings.streamMapping).toEqual(mapping.settings.streamMapping);
    expect(other.settings.functionTimeoutSeconds.StreamHandler).toBe(functionTimeoutSeconds('StreamHandler', config));
    expect(readdirSync(cacheDir).filter((file) => file.endsWith('.json'))).toHaveLength(2);
  }, 120_000);
});
