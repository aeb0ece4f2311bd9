import type { SiteConfig } from '#config/site-config.ts';
import { functionTimeoutSeconds } from '#lib/function-timeouts.ts';
import type { FunctionName } from '#lib/lambda-functions.ts';
import type { FunctionLimits } from '#local/lambda-invocation.ts';
import type { AwsSemanticsConfig } from './config.ts';
import { streamMappingSettings, type StreamMappingSettings } from '#lib/stream-mapping.ts';

export interface SiteFunctions {
  /** How the runner invokes a function: its timeout, and whether it stops it there. */
  limitsOf(functionName: FunctionName): FunctionLimits;
  /** The stream's event source mapping, as the stack deploys it. */
  streamMapping: StreamMappingSettings;
}

/**
 * The site's functions as the runner runs them with FLEETWARD_AWS_SEMANTICS `modes`. The stream's mapping and the
 * timeouts are the values the stack is built from (lib/stream-mapping.ts, lib/function-timeouts.ts), which
 * test/cdk/stack-settings.test.ts finds in the synthesized template for any config: nothing is synthesized at start.
 * The timeouts are enforced under `lambda-timeouts` only.
 */
export async function siteFunctions(config: SiteConfig, semantics: AwsSemanticsConfig | undefined, _log: (line: string) => void): Promise<SiteFunctions> {
  const stopAtTimeout = semantics?.modes.includes('lambda-timeouts') ?? false;
  return {
    limitsOf: (functionName) => ({ functionName, timeoutMs: functionTimeoutSeconds(functionName, config) * 1000, stopAtTimeout }),
    streamMapping: streamMappingSettings(),
  };
}
