import type { SiteConfig } from '#config/site-config.ts';
import { functionTimeoutSeconds } from '#lib/function-timeouts.ts';
import type { FunctionName } from '#lib/lambda-functions.ts';
import type { FunctionLimits } from '#local/lambda-invocation.ts';
import type { AwsSemanticsConfig } from './config.ts';
import { readStreamMapping, type StreamMappingSettings } from './stack-settings.ts';

export interface SiteFunctions {
  /** How the runner invokes a function: its timeout, and whether it stops it there. */
  limitsOf(functionName: FunctionName): FunctionLimits;
  /** The stream's event source mapping, from the template. */
  streamMapping: StreamMappingSettings;
}

/**
 * The site's functions as the runner runs them with FLEETWARD_AWS_SEMANTICS `modes`. The stream's mapping is the
 * template's (read once, see stack-settings.ts). The timeouts are those the stack is given (lib/function-timeouts.ts,
 * which test/cdk/stack-settings.test.ts finds in the template for any config), enforced under `lambda-timeouts` only.
 */
export async function siteFunctions(config: SiteConfig, semantics: AwsSemanticsConfig | undefined, log: (line: string) => void): Promise<SiteFunctions> {
  const mapping = await readStreamMapping();
  log(`the stream's event source mapping from the stack's template (${mapping.source === 'cache' ? 'cached' : 'synthesized'}, ${mapping.ms} ms)`);
  const stopAtTimeout = semantics?.modes.includes('lambda-timeouts') ?? false;
  return {
    limitsOf: (functionName) => ({ functionName, timeoutMs: functionTimeoutSeconds(functionName, config) * 1000, stopAtTimeout }),
    streamMapping: mapping.settings.streamMapping,
  };
}
