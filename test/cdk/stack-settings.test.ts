import { beforeAll, describe, expect, it } from 'vitest';
import { defaultSiteConfig, type SiteConfig } from '#config/site-config.ts';
import { functionTimeoutSeconds } from '#lib/function-timeouts.ts';
import { FUNCTION_NAMES } from '#lib/lambda-functions.ts';
import { streamFilters } from '#lib/stream-filters.ts';
import { STREAM_BATCH_SIZE, streamMappingSettings } from '#lib/stream-mapping.ts';
import { stackSettingsOf, synthesizeTemplate, type StackSettings } from '#test/support/stack-template.ts';

// The local runner delivers the stream and times the functions by the values the stack is built from, without
// synthesizing it at start (FLEETWARD_AWS_SEMANTICS parallel-shards and lambda-timeouts): here they are held equal
// to what the synthesized template deploys, for the default config and for another.

const another = (): SiteConfig => {
  const config = defaultSiteConfig();
  config.instance_create_retry.max_attempts += 5;
  config.sweep.interval_seconds *= 2;
  return config;
};

describe.each([
  ['the default site config', defaultSiteConfig],
  ['another site config', another],
])('the stack synthesized for %s', (_name, configOf) => {
  const config = configOf();
  let settings: StackSettings;
  beforeAll(() => {
    settings = stackSettingsOf(synthesizeTemplate(config));
  }, 120_000);

  it("deploys the stream mapping the local runner's poller delivers by (lib/stream-mapping.ts)", () => {
    expect(settings.streamMapping).toEqual(streamMappingSettings());
    expect(settings.streamMapping).toEqual({
      filterPatterns: streamFilters().map((filter) => filter.pattern),
      batchSize: STREAM_BATCH_SIZE,
      maximumRetryAttempts: 10,
      maximumRecordAgeSeconds: 3600,
      bisectBatchOnFunctionError: true,
      parallelizationFactor: 1,
    });
  });

  it('gives each function the timeout the local runner invokes it with (lib/function-timeouts.ts)', () => {
    expect(settings.functionTimeoutSeconds).toEqual(Object.fromEntries(FUNCTION_NAMES.map((name) => [name, functionTimeoutSeconds(name, config)])));
  });
});
