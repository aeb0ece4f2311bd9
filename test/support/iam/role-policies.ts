import type { CfnTemplate } from './cfn-intrinsics.ts';

/** An IAM policy statement as a template holds it, resolved to concrete strings. */
export interface PolicyStatement {
  Sid?: string;
  Effect: 'Allow' | 'Deny';
  Action: string | string[];
  Resource: string | string[];
  Condition?: Record<string, Record<string, string | string[]>>;
}

/**
 * Every statement a role is given by the template: its own inline policies and the AWS::IAM::Policy resources attached
 * to it (where CDK's grants go), resolved. A managed policy is refused: its contents are not in the template.
 */
export function rolePolicyStatements(template: CfnTemplate, roleId: string, resolve: (value: unknown) => any): PolicyStatement[] {
  const role = template.Resources[roleId];
  if (role?.Type !== 'AWS::IAM::Role') throw new Error(`${roleId} is not a role of the template`);
  if (role.Properties?.ManagedPolicyArns) throw new Error(`${roleId} has managed policies, which the check cannot read`);
  const inline = (role.Properties?.Policies ?? []).flatMap((policy: any) => policy.PolicyDocument.Statement);
  const attached = Object.values(template.Resources)
    .filter((resource) => resource.Type === 'AWS::IAM::Policy' && resource.Properties?.Roles?.some((r: any) => r.Ref === roleId))
    .flatMap((policy) => policy.Properties!.PolicyDocument.Statement);
  return [...inline, ...attached].map((statement) => resolve(statement) as PolicyStatement);
}
