import fc from 'fast-check';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { gte } from '#lib/semver-gte.ts';

// The bundles' stand-in for semver (lib/semver-gte.ts) must agree with semver itself wherever its one caller goes.
const identifier = fc.oneof(fc.nat({ max: 20 }).map(String), fc.constantFrom('alpha', 'beta', 'rc', 'x-1', 'A'));
const version = fc
  .tuple(fc.nat({ max: 3 }), fc.nat({ max: 3 }), fc.nat({ max: 3 }), fc.array(identifier, { maxLength: 3 }), fc.boolean())
  .map(([major, minor, patch, pre, build]) => `${major}.${minor}.${patch}${pre.length > 0 ? `-${pre.join('.')}` : ''}${build ? '+b.7' : ''}`);

describe('semver-gte', () => {
  it('agrees with semver.gte on SemVer 2.0 versions, pre-releases and build metadata included', () => {
    fc.assert(
      fc.property(version, version, (a, b) => gte(a, b) === semver.gte(a, b)),
      { numRuns: 2000 },
    );
  });

  it('refuses what is not a version, as semver does', () => {
    expect(() => gte('2.x', '1.0.0')).toThrow(TypeError);
  });
});
