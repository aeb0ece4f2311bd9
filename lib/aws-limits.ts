import { readFileSync } from 'node:fs';
import type { IPolicyValidationContext, IPolicyValidationPlugin, PolicyValidationPluginReport } from 'aws-cdk-lib';
import { FilterPatternError, parseFilterPattern } from './lambda-event-filter.ts';

/**
 * What AWS refuses at deploy, or at run time, that neither CDK nor CloudFormation checks before `cdk deploy`, each
 * with the published limit. Checked on the synthesized template by `AwsLimitsChecks` (a violation stops synth) and
 * by the tests.
 */
export const AWS_LIMITS = {
  /** Lambda: filters per event source mapping (5 by default, 10 on request). */
  filtersPerEventSourceMapping: 5,
  /** Lambda: characters in one filter pattern. */
  filterPatternChars: 4096,
  /** Lambda keeps this much of an account's concurrency unreserved: reservations may take only the rest. */
  unreservedConcurrency: 100,
  /** API Gateway HTTP API: the most an integration may take, so a function behind it must finish sooner. */
  httpApiIntegrationSeconds: 30,
  /** API Gateway HTTP API: one request's payload. */
  httpApiPayloadBytes: 10 * 1024 * 1024,
  /** Lambda: a synchronous invocation's request payload (the API Gateway event around the body included). */
  lambdaRequestBytes: 6 * 1024 * 1024,
  /** DynamoDB: one item, attribute names and values together. */
  dynamoItemBytes: 400 * 1024,
  /** DynamoDB: one transaction's items together, and how many it may hold. */
  dynamoTransactionBytes: 4 * 1024 * 1024,
  dynamoTransactionItems: 100,
} as const;

export const HTTP_API_PAYLOAD_BYTES = AWS_LIMITS.httpApiPayloadBytes;

export interface AwsLimitViolation {
  /** The limit, named as AWS names it. */
  rule: string;
  resource: string;
  message: string;
}

interface TemplateResource {
  Type: string;
  // biome-ignore lint/suspicious/noExplicitAny: CloudFormation properties are untyped JSON, read by path per resource type
  Properties?: Record<string, any>;
}
type Template = { Resources?: Record<string, TemplateResource> };

export interface AwsLimitsOptions {
  /** `[lambda] account_concurrency`: the account's concurrent executions quota in the target region. */
  accountConcurrency: number;
}

export function awsLimitViolations(template: Template, options: AwsLimitsOptions): AwsLimitViolation[] {
  const resources = Object.entries(template.Resources ?? {});
  return [...filterViolations(resources), ...concurrencyViolations(resources, options), ...apiTimeoutViolations(resources)];
}

function filterViolations(resources: Array<[string, TemplateResource]>): AwsLimitViolation[] {
  const violations: AwsLimitViolation[] = [];
  for (const [id, resource] of resources) {
    if (resource.Type !== 'AWS::Lambda::EventSourceMapping') continue;
    const filters: Array<{ Pattern: string }> = resource.Properties?.FilterCriteria?.Filters ?? [];
    if (filters.length > AWS_LIMITS.filtersPerEventSourceMapping) {
      violations.push({
        rule: 'Lambda: filters per event source mapping',
        resource: id,
        message:
          `${filters.length} filters; Lambda allows ${AWS_LIMITS.filtersPerEventSourceMapping} ` +
          'per event source mapping (10 on request) and refuses to create the mapping otherwise',
      });
    }
    filters.forEach(({ Pattern }, i) => {
      if (Pattern.length > AWS_LIMITS.filterPatternChars) {
        violations.push({
          rule: 'Lambda: filter pattern length',
          resource: id,
          message: `filter ${i + 1} is ${Pattern.length} characters; Lambda allows ${AWS_LIMITS.filterPatternChars}`,
        });
      }
      try {
        parseFilterPattern(Pattern);
      } catch (error) {
        if (!(error instanceof FilterPatternError) && !(error instanceof SyntaxError)) throw error;
        violations.push({ rule: 'Lambda: filter rule syntax', resource: id, message: `filter ${i + 1}: ${error.message}` });
      }
    });
  }
  return violations;
}

function concurrencyViolations(resources: Array<[string, TemplateResource]>, { accountConcurrency }: AwsLimitsOptions): AwsLimitViolation[] {
  const reserved = resources
    .filter(([, resource]) => resource.Type === 'AWS::Lambda::Function')
    .map(([id, resource]) => [id, Number(resource.Properties?.ReservedConcurrentExecutions ?? 0)] as const)
    .filter(([, count]) => count > 0);
  const total = reserved.reduce((sum, [, count]) => sum + count, 0);
  if (total + AWS_LIMITS.unreservedConcurrency <= accountConcurrency) return [];
  return [
    {
      rule: 'Lambda: concurrent executions quota',
      resource: reserved.map(([id]) => id).join(', '),
      message: concurrencyMessage(total, accountConcurrency),
    },
  ];
}

/** Also what the stack says when `[lambda]` asks for more than the account has (lib/site-api.ts). */
export function concurrencyMessage(reserved: number, accountConcurrency: number): string {
  return (
    `reserved concurrency ${reserved} plus the ${AWS_LIMITS.unreservedConcurrency} ` +
    `Lambda keeps unreserved is ${reserved + AWS_LIMITS.unreservedConcurrency}, ` +
    `over the account's quota of ${accountConcurrency} ([lambda] account_concurrency): lower the [lambda] *_reserved_concurrency keys, ` +
    `or ask AWS for a higher "Concurrent executions" quota and set account_concurrency to it`
  );
}

function apiTimeoutViolations(resources: Array<[string, TemplateResource]>): AwsLimitViolation[] {
  const functions = new Map(resources.filter(([, r]) => r.Type === 'AWS::Lambda::Function'));
  const violations: AwsLimitViolation[] = [];
  for (const [, resource] of resources) {
    if (resource.Type !== 'AWS::ApiGatewayV2::Integration') continue;
    const target = resource.Properties?.IntegrationUri?.['Fn::GetAtt']?.[0] as string | undefined;
    const fn = target ? functions.get(target) : undefined;
    if (!target || !fn) continue;
    const timeout = Number(fn.Properties?.Timeout ?? 3);
    if (timeout >= AWS_LIMITS.httpApiIntegrationSeconds) {
      violations.push({
        rule: 'API Gateway: HTTP API integration timeout',
        resource: target,
        message:
          `times out after ${timeout} s, but the HTTP API gives up after ${AWS_LIMITS.httpApiIntegrationSeconds} ` +
          's: the caller would get a 503 while the function still runs',
      });
    }
  }
  return violations;
}

/** The checks as a CDK validation plugin: a violation stops `cdk synth` and `cdk deploy` with the report. */
export class AwsLimitsChecks implements IPolicyValidationPlugin {
  readonly name = 'fleetward-aws-limits';
  private readonly options: AwsLimitsOptions;
  constructor(options: AwsLimitsOptions) {
    this.options = options;
  }

  validate(context: IPolicyValidationContext): PolicyValidationPluginReport {
    const violations = context.templatePaths.flatMap((templatePath) =>
      awsLimitViolations(JSON.parse(readFileSync(templatePath, 'utf8')) as Template, this.options).map((violation) => ({
        ruleName: violation.rule,
        description: violation.message,
        violatingResources: violation.resource.split(', ').map((resourceLogicalId) => ({ resourceLogicalId, templatePath, locations: [] })),
      })),
    );
    return { success: violations.length === 0, violations };
  }
}
