import { createHash } from 'node:crypto';
import type { CfnElement } from 'aws-cdk-lib';
import { Construct, type IConstruct } from 'constructs';

/**
 * One part of the site stack (its tables, its API, its sweep, ...): a unit of the code and of the construct tree, but
 * not of the template. Its resources keep the logical ids they would have as the stack's own children (the stack
 * allocates them with `logicalIdOutsideParts`), because CloudFormation replaces a resource whose logical id changes:
 * the table, retained, would be orphaned and a second one made. So resources move into, out of and between parts
 * without a deployment seeing it. Two resources of one logical id in different parts stop synth (CDK refuses a
 * template section with a duplicate key).
 */
export class SitePart extends Construct {}

/** The ids some constructs take in logical ids instead of their own (`nameInLogicalIds`). */
const idsInLogicalIds = new WeakMap<IConstruct, string>();

/**
 * Has `construct` stand as `id` in the logical ids of itself and its children. For constructs CDK names after another
 * construct's unique id, which changes with the parts in that one's path: `id` is the name it would have without them.
 */
export function nameInLogicalIds(construct: IConstruct, id: string): void {
  idsInLogicalIds.set(construct, id);
}

const pathWithoutParts = (scopes: IConstruct[]) =>
  scopes.filter((scope) => !(scope instanceof SitePart)).map((scope) => idsInLogicalIds.get(scope) ?? scope.node.id);

/** The logical id CDK would give `element` (Stack.allocateLogicalId) were no part in its path. */
export function logicalIdOutsideParts(element: CfnElement): string {
  const scopes = element.node.scopes;
  return makeUniqueId(pathWithoutParts(scopes.slice(scopes.indexOf(element.stack) + 1)));
}

/** What Names.nodeUniqueId would give for `construct` were no part in its path (it starts below the app). */
export function uniqueIdOutsideParts(construct: IConstruct): string {
  return makeUniqueId(pathWithoutParts(construct.node.scopes.slice(1)));
}

// CDK's naming of logical and unique ids (aws-cdk-lib core/lib/private/uniqueid.ts, which the package does not export):
// the path's components without `Default`, each reduced to letters and digits, a component that ends the previous one
// left out, `Resource` left out, and a hash of the whole path. A single component is used as it is.
const HIDDEN_ID = 'Default';
const HIDDEN_FROM_HUMAN_ID = 'Resource';
const MAX_HUMAN_LENGTH = 240;
const MAX_ID_LENGTH = 255;

const alphanumeric = (component: string) => component.replace(/[^A-Za-z0-9]/g, '');

function makeUniqueId(components: string[]): string {
  const path = components.filter((component) => component !== HIDDEN_ID);
  if (path.length === 0) throw new Error('a unique id needs at least one path component besides Default');
  if (path.length === 1 && alphanumeric(path[0]!).length <= MAX_ID_LENGTH) return alphanumeric(path[0]!);
  const hash = createHash('md5').update(path.join('/')).digest('hex').slice(0, 8).toUpperCase();
  const human: string[] = [];
  for (const component of path) if (!human.at(-1)?.endsWith(component)) human.push(component);
  return (
    human
      .filter((component) => component !== HIDDEN_FROM_HUMAN_ID)
      .map(alphanumeric)
      .join('')
      .slice(0, MAX_HUMAN_LENGTH) + hash
  );
}
