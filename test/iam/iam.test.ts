import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AWS_CALL_LOG_ENV } from '#local/aws-call-recorder.ts';
import { buildSiteApp } from '#lib/app.ts';
import { AWS_ONLY_ACTIONS } from '#lib/function-permissions.ts';
import { FUNCTION_NAMES, type FunctionName } from '#lib/lambda-functions.ts';
import { parseLogicalResource } from '#lib/logical-resources.ts';
import type { SiteStack } from '#lib/site-stack.ts';
import { cfnResolver, type CfnTemplate } from '#test/support/iam/cfn-intrinsics.ts';
import { checkPermissions, type CallToCheck } from '#test/support/iam/permission-check.ts';
import { DEFAULT_AWS_CALL_LOG, readRecordedCalls } from '#test/support/iam/recorded-calls.ts';
import { rolePolicyStatements } from '#test/support/iam/role-policies.ts';
import cdkJson from '../../cdk.json' with { type: 'json' };

// IAM, proven by the suite: every AWS call the e2e suite's sites made (recorded by local/aws-call-recorder.ts, run
// after the e2e suite: `npm test` orders it) is held against the synthesized role of the function that made it, with
// an IAM policy simulator. A call a role would deny fails, and so does a grant that nothing used (unless only AWS
// calls it, lib/function-permissions.ts AWS_ONLY_ACTIONS).

const SITE = 'example-aws';
const callLog = resolve(process.env[AWS_CALL_LOG_ENV] ?? DEFAULT_AWS_CALL_LOG);
let outdir: string;
let stack: SiteStack;
let template: CfnTemplate;

beforeAll(() => {
  outdir = mkdtempSync(join(tmpdir(), 'fleetward-iam-'));
  const built = buildSiteApp({ site: SITE, appProps: { outdir, context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } } });
  stack = built.stack;
  built.app.synth();
  template = JSON.parse(readFileSync(join(outdir, `${stack.artifactId}.template.json`), 'utf8'));
}, 120_000);

afterAll(() => {
  if (outdir) rmSync(outdir, { recursive: true, force: true });
});

/** The ARN a logical resource has in the synthesized stack, resolved as the policies' are. */
function arnIn(logical: string, resolveIntrinsics: (value: unknown) => any): string {
  const parsed = parseLogicalResource(logical);
  const arn = (token: string) => resolveIntrinsics(stack.resolve(token)) as string;
  switch (parsed?.kind) {
    case 'table':
      return arn((parsed.table === 'main' ? stack.table : stack.idempotencyTable).tableArn);
    case 'index':
      return `${arn(stack.table.tableArn)}/index/${parsed.indexName}`;
    case 'stream':
      return arn(stack.table.tableStreamArn!);
    case 'event-bus':
      return arn(stack.bus.eventBusArn);
    case 'any':
      return '*';
    default:
      // Outside the site's resources: no role of the stack allows it, which the check reports with the call.
      return logical;
  }
}

describe("each function's role", () => {
  it('allows every AWS call its function made in the e2e suite, and grants nothing those calls did not use', async () => {
    const recorded = readRecordedCalls(callLog);
    const resolveIntrinsics = cfnResolver(template);
    const roleIdOf = (name: FunctionName) => stack.getLogicalId(stack.functions[name].role.node.defaultChild as never);
    const policies = Object.fromEntries(FUNCTION_NAMES.map((name) => [name, rolePolicyStatements(template, roleIdOf(name), resolveIntrinsics)]));
    const calls: CallToCheck[] = recorded.map((call) => ({ ...call, resource: arnIn(call.resource, resolveIntrinsics), recordedAs: call.resource }));
    // Every function is in the recordings: a role checked against no calls would prove nothing.
    expect(new Set(recorded.map((call) => call.function))).toEqual(new Set(FUNCTION_NAMES));
    const findings = await checkPermissions({ policies, calls, awsOnlyActions: AWS_ONLY_ACTIONS });
    expect(findings.denied, "calls the function's role would deny").toEqual([]);
    expect(findings.unused, 'grants no recorded call used (remove them, or say in AWS_ONLY_ACTIONS why only AWS calls them)').toEqual([]);
  }, 120_000);
});
