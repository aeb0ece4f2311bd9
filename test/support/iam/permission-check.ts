import { runSimulation, type Simulation } from '@cloud-copilot/iam-simulate';
import { FAKE_ACCOUNT } from './cfn-intrinsics.ts';
import type { PolicyStatement } from './role-policies.ts';

/** A recorded call with its resource resolved to the ARN the policies name. */
export interface CallToCheck {
  function: string;
  action: string;
  /** A concrete ARN, or `*` for actions without resource-level permissions. */
  resource: string;
  context?: Record<string, string | string[]>;
  /** How the call was recorded (its logical resource), to name it in a finding. */
  recordedAs?: string;
}

export interface PermissionCheckInput {
  /** Each function's role, as its policy statements. */
  policies: Record<string, PolicyStatement[]>;
  calls: CallToCheck[];
  /** Actions granted for what only happens in AWS (Lambda's own logging, tracing...), by action: why. */
  awsOnlyActions: Record<string, string>;
}

export interface PermissionFindings {
  /** Calls the function's role would not allow: `<function>: <action> on <resource> …`. */
  denied: string[];
  /** Granted (action, resource) pairs no call used and no AWS-only reason covers. */
  unused: string[];
}

const listOf = (value: string | string[]) => [value].flat();
const described = (call: CallToCheck) => {
  const resource = call.recordedAs ? `${call.recordedAs} (${call.resource})` : call.resource;
  return `${call.action} on ${resource}${call.context ? ` with ${JSON.stringify(call.context)}` : ''}`;
};

async function allows(fn: string, statements: PolicyStatement[], call: CallToCheck): Promise<{ allowed: boolean; why: string }> {
  const simulation: Simulation = {
    request: {
      principal: `arn:aws:iam::${FAKE_ACCOUNT}:role/${fn}`,
      action: call.action,
      resource: { resource: call.resource, accountId: FAKE_ACCOUNT },
      contextVariables: call.context ?? {},
    },
    identityPolicies: [{ name: fn, policy: { Version: '2012-10-17', Statement: statements } }],
    serviceControlPolicies: [],
    resourceControlPolicies: [],
  };
  const result = await runSimulation(simulation, {});
  if (result.resultType === 'error') return { allowed: false, why: `the simulator refused the request: ${JSON.stringify(result.errors)}` };
  return { allowed: result.overallResult === 'Allowed', why: result.overallResult };
}

/**
 * Holds recorded calls against the functions' roles with an IAM policy simulator: every call must be allowed by its
 * function's role, and every (action, resource) a role allows must be used by some call of that function, unless the
 * action is listed as needed only in AWS.
 */
export async function checkPermissions(input: PermissionCheckInput): Promise<PermissionFindings> {
  const denied: string[] = [];
  for (const call of input.calls) {
    const statements = input.policies[call.function];
    if (!statements) {
      denied.push(`${call.function}: ${described(call)}, but the stack has no such function`);
      continue;
    }
    const { allowed, why } = await allows(call.function, statements, call);
    if (!allowed) denied.push(`${call.function}: ${described(call)} is denied by its role (${why})`);
  }

  const unused: string[] = [];
  for (const [fn, statements] of Object.entries(input.policies)) {
    const calls = input.calls.filter((call) => call.function === fn);
    for (const statement of statements.filter((s) => s.Effect === 'Allow')) {
      for (const action of listOf(statement.Action)) {
        for (const resource of listOf(statement.Resource)) {
          if (input.awsOnlyActions[action] !== undefined) {
            // Not called locally, but it must still be able to allow something: the simulator refuses a request of an
            // action on a resource type it does not take (ListStreams on a stream's ARN, say).
            const { allowed, why } = await allows(fn, [statement], { function: fn, action, resource });
            if (!allowed && why.startsWith('the simulator refused')) unused.push(`${fn}: ${action} on ${resource} can allow nothing: ${why}`);
            continue;
          }
          // The grant alone, with its statement's conditions: does any call of the function fall under it?
          const grant: PolicyStatement = { Effect: 'Allow', Action: action, Resource: resource };
          if (statement.Condition) grant.Condition = statement.Condition;
          let used = false;
          for (const call of calls) {
            if ((await allows(fn, [grant], call)).allowed) {
              used = true;
              break;
            }
          }
          const statementId = statement.Sid ? ` (statement ${statement.Sid})` : '';
          if (!used) unused.push(`${fn}: ${action} on ${resource}${statementId} is granted but nothing recorded used it`);
        }
      }
    }
  }
  return { denied, unused };
}
