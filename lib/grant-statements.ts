import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Grant } from './function-permissions.ts';

/** The statement of one grant, its logical resources turned into the stack's ARNs by `arnOf`. */
export function grantStatement(grant: Grant, arnOf: (logicalResource: string) => string): PolicyStatement {
  return new PolicyStatement({
    sid: grant.sid,
    effect: Effect.ALLOW,
    actions: [...grant.actions],
    resources: grant.resources.map(arnOf),
    ...(grant.conditions ? { conditions: grant.conditions } : {}),
  });
}
