import type { Duration } from 'aws-cdk-lib';
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { AgentNetwork } from './agent-network.ts';
import { handlerEntry, type FleetwardFunction } from './fleetward-function.ts';
import { siteFunction, type CalledResources } from './site-function.ts';

/** What the stack gives each function that calls the site agent: the reconcilers' creates, deletes and status checks. */
export interface AgentCallerProps {
  siteName: string;
  resources: CalledResources;
  /** agentCallerEnvironment (function-environment.ts): also where the agent is and where the signing keys are. */
  environment: Record<string, string>;
  timeout: Duration;
  logRetention: RetentionDays;
  /** The VPC they run in, with its endpoints; undefined without `[site_agent] vpc`. */
  network: AgentNetwork | undefined;
  /** The secret of the keys their calls to the agent are signed with; undefined only for the local sample. */
  signingSecretArn: string | undefined;
}

export interface AgentCallerFunction {
  name: 'StreamHandler' | 'SweepHandler';
  handler: 'stream' | 'sweep';
  /** What it does, after `Fleetward <site>: `. */
  purpose: string;
  /** FleetwardFunctionProps.wildcardReasons: why its other grants on Resource "*" take no narrower resource. */
  wildcardReasons?: string[];
}

/** A function that calls the site agent: its grants, the signing keys it may read, and its place in the agent's VPC. */
export function agentCallerFunction(
  scope: Construct,
  { name, handler, purpose, wildcardReasons }: AgentCallerFunction,
  props: AgentCallerProps,
): FleetwardFunction {
  const { siteName, network, signingSecretArn } = props;
  const fn = siteFunction(scope, name, {
    entry: handlerEntry(handler),
    description: `Fleetward ${siteName}: ${purpose}`,
    environment: props.environment,
    ...(network ? { network } : {}),
    memorySize: 512,
    timeout: props.timeout,
    logRetention: props.logRetention,
    resources: props.resources,
    ...(wildcardReasons ? { wildcardReasons } : {}),
  });
  if (signingSecretArn) {
    fn.role.addToPrincipalPolicy(
      new PolicyStatement({ sid: 'ReadAgentSigningKeys', effect: Effect.ALLOW, actions: ['secretsmanager:GetSecretValue'], resources: [signingSecretArn] }),
    );
  }
  // Its first calls go through the endpoints.
  if (network) fn.function.node.addDependency(network);
  return fn;
}
