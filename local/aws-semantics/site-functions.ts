import type { SiteConfig } from '#config/site-config.ts';
import { functionTimeoutSeconds } from '#lib/function-timeouts.ts';
import type { FunctionName } from '#lib/lambda-functions.ts';
import type { FunctionLimits } from '#local/lambda-invocation.ts';
import type { AwsSemanticsConfig } from './config.ts';
import { readStackSettings, type StackSettings, type StreamMappingSettings } from './stack-settings.ts';

export interface SiteFunctions {
  /** How the runner invokes a function: its timeout (the template's under the modes), and whether it stops it there. */
  limitsOf(functionName: FunctionName): FunctionLimits;
  /** The stream's event source mapping from the template, under `parallel-shards`; the poller's own defaults otherwise. */
  streamMapping: StreamMappingSettings | undefined;
}

/**
 * The site's functions as the runner runs them with FLEETWARD_AWS_SEMANTICS `modes`: under `parallel-shards` or
 * `lambda-timeouts` the stack's template says (read once, see stack-settings.ts); otherwise the timeouts the stack is
 * given (lib/function-timeouts.ts), never enforced.
 */
export async function siteFunctions(config: SiteConfig, semantics: AwsSemanticsConfig | undefined, log: (line: string) => void): Promise<SiteFunctions> {
  const emulates = (mode: AwsSemanticsConfig['modes'][number]) => semantics?.modes.includes(mode) ?? false;
  let stack: StackSettings | undefined;
  if (emulates('parallel-shards') || emulates('lambda-timeouts')) {
    const read = await readStackSettings(config);
    stack = read.settings;
    log(`the stack's settings from its template (${read.source === 'cache' ? 'cached' : 'synthesized'}, ${read.ms} ms)`);
  }
  return {
    limitsOf: (functionName) => ({
      functionName,
      timeoutMs: (stack?.functionTimeoutSeconds[functionName] ?? functionTimeoutSeconds(functionName, config)) * 1000,
      stopAtTimeout: emulates('lambda-timeouts'),
    }),
    streamMapping: emulates('parallel-shards') ? stack?.streamMapping : undefined,
  };
}
