/**
 * Stands in for `@aws-lambda-powertools/jmespath` in the Lambda bundles (esbuild aliases set by
 * fleetward-function.ts). Its one user there is Powertools Idempotency, which the API configures with two field
 * names (`eventKeyJmesPath: 'scope'`, `payloadValidationJmesPath: 'request'`, http/api-handler.ts); the whole
 * expression engine is ≈ 23 KB of each API bundle. This evaluates what JMESPath gives for a dotted path of plain
 * field names (a missing field, or a field of something not an object, is null) and refuses any other expression,
 * so a richer one can never be evaluated wrongly: it fails the first request that uses it, in the bundle tests too.
 */

const fieldPath = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

export function search(expression: string, data: unknown): unknown {
  if (!fieldPath.test(expression)) throw new Error(`JMESPath expression "${expression}": the bundles evaluate field paths only (lib/jmespath-fields.ts)`);
  let value = data;
  for (const field of expression.split('.')) {
    value = value !== null && typeof value === 'object' && !Array.isArray(value) ? ((value as Record<string, unknown>)[field] ?? null) : null;
  }
  return value;
}

/**
 * What `@aws-lambda-powertools/jmespath/functions` exports: the custom functions an expression may call. Field
 * paths call none, so it has nothing to add; IdempotencyConfig only constructs it as its default option.
 */
export class PowertoolsFunctions {}
