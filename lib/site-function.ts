import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import type { EventBus } from 'aws-cdk-lib/aws-events';
import type { Construct } from 'constructs';
import { FleetwardFunction, type FleetwardFunctionProps } from './fleetward-function.ts';
import { FUNCTION_GRANTS } from './function-permissions.ts';
import { grantStatement } from './grant-statements.ts';
import type { FunctionName } from './lambda-functions.ts';
import { parseLogicalResource } from './logical-resources.ts';

/** The resources of the stack that the functions call: what the logical resources of their grants name. */
export interface CalledResources {
  table: Table;
  idempotencyTable: Table;
  bus: EventBus;
}

/** The ARN of a logical resource (lib/logical-resources.ts) in the stack. */
export function arnOf(resources: CalledResources, resource: string): string {
  const parsed = parseLogicalResource(resource);
  switch (parsed?.kind) {
    case 'table':
      return (parsed.table === 'main' ? resources.table : resources.idempotencyTable).tableArn;
    case 'index':
      return `${resources.table.tableArn}/index/${parsed.indexName}`;
    case 'stream':
      return resources.table.tableStreamArn!;
    case 'event-bus':
      return resources.bus.eventBusArn;
    case 'any':
      return '*';
    default:
      throw new Error(`function-permissions.ts: ${resource} is no resource of the stack`);
  }
}

export interface SiteFunctionProps extends FleetwardFunctionProps {
  resources: CalledResources;
}

/**
 * One of the site's functions (lib/lambda-functions.ts), its construct id its name. Least privilege: its role gets
 * what function-permissions.ts lists for it (proven by test/iam), beyond its own log group and X-Ray.
 */
export function siteFunction(scope: Construct, name: FunctionName, { resources, ...props }: SiteFunctionProps): FleetwardFunction {
  const fn = new FleetwardFunction(scope, name, props);
  for (const grant of FUNCTION_GRANTS[name]) fn.role.addToPrincipalPolicy(grantStatement(grant, (resource) => arnOf(resources, resource)));
  return fn;
}
