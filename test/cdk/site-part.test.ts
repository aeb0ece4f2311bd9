import { App, CfnResource, Names, Stack, type CfnElement } from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { logicalIdOutsideParts, nameInLogicalIds, SitePart, uniqueIdOutsideParts } from '#lib/site-part.ts';

/** A stack that allocates logical ids as SiteStack does. */
class PartedStack extends Stack {
  protected override allocateLogicalId(element: CfnElement): string {
    return logicalIdOutsideParts(element);
  }
}

/** Makes the constructs of `path` below `root` (reusing those there), the last one a resource. */
function resourceAt(root: Construct, path: string[]): CfnResource {
  let scope = root;
  for (const id of path.slice(0, -1)) scope = (scope.node.tryFindChild(id) as Construct | undefined) ?? new Construct(scope, id);
  return new CfnResource(scope, path.at(-1)!, { type: 'Test::Resource' });
}

/** The same path in a plain stack (CDK's own ids) and in a parted stack, below a part or not; stacks of one name. */
function twins(path: string[], inPart: boolean) {
  const plain = new Stack(new App(), 'Fleetward-site');
  const parted = new PartedStack(new App(), 'Fleetward-site');
  const outer = inPart ? new SitePart(new SitePart(parted, 'Outer'), 'Inner') : parted;
  return { plain: resourceAt(plain, path), parted: resourceAt(outer, path) };
}

// Each rule of CDK's scheme: one component alone, `Default` and `Resource`, a component that ends the one before it,
// characters other than letters and digits, a human part longer than 240 characters, and one component over 255.
const paths = [
  ['Table'],
  ['Api', 'Resource'],
  ['Api', 'Default', 'Resource'],
  ['Default', 'Queue'],
  ['TenantApi', 'Role', 'DefaultPolicy', 'Resource'],
  ['Sweep', 'SweepHandler', 'Handler'],
  ['Rule', 'Rule'],
  ['Fleetward-api', 'Route$default'],
  ['x'.repeat(200), 'y'.repeat(100)],
  ['z'.repeat(300)],
];

describe('the parts of a stack', () => {
  it.each(paths.map((path) => [path.join('/').slice(0, 60), path]))('make the logical id CDK makes: %s', (_name, path) => {
    for (const inPart of [false, true]) {
      const { plain, parted } = twins(path, inPart);
      expect(parted.stack.getLogicalId(parted), `in a part: ${inPart}`).toBe(plain.stack.getLogicalId(plain));
      expect(parted.stack.resolve(parted.logicalId)).toBe(plain.stack.resolve(plain.logicalId));
    }
  });

  it('are left out of unique ids as well, for what CDK names after one', () => {
    for (const path of paths) {
      const { plain, parted } = twins(path, true);
      expect(uniqueIdOutsideParts(parted)).toBe(Names.nodeUniqueId(plain.node));
    }
  });

  it('let a construct named after another one stand in logical ids under the name it would have outside them', () => {
    const outsideName = 'AllowEventRuleFleetwardsiteHandlerA1B2C3D4';
    const { plain } = twins(['Rule', outsideName], false);
    const parted = new PartedStack(new App(), 'Fleetward-site');
    const named = resourceAt(new SitePart(parted, 'Part'), ['Rule', 'AllowEventRuleFleetwardsitePartHandlerE5F6A7B8']);
    nameInLogicalIds(named, outsideName);
    expect(parted.getLogicalId(named)).toBe(plain.stack.getLogicalId(plain));
  });

  it('cannot give two resources one logical id: synth stops', () => {
    const app = new App();
    const stack = new PartedStack(app, 'Fleetward-site');
    resourceAt(new SitePart(stack, 'One'), ['Queue']);
    resourceAt(new SitePart(stack, 'Other'), ['Queue']);
    expect(() => app.synth()).toThrow("section 'Resources' already contains 'Queue'");
  });
});
