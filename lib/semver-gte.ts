/**
 * Stands in for `semver` in the Lambda bundles (an esbuild alias set by fleetward-function.ts). Its one user there
 * is aws-xray-sdk-core (through Powertools Tracer), whose AWS SDK v2 patcher (`captureAWS`, which Fleetward never
 * calls: it traces SDK v3 clients) checks `semver.gte(AWS.VERSION, minimum)`; the whole package is ≈ 29 KB of every
 * bundle and evaluating it ≈ 4 ms of every cold start. This is `gte` as semver 7 defines it for SemVer 2.0 strings
 * (build metadata ignored, a pre-release below its release); anything else of semver's is absent here.
 */

const pattern = /^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;

/** A version as its identifiers in order of precedence: major, minor, patch as numbers, then the pre-release's. */
function identifiers(version: string): Array<string | number> {
  const found = pattern.exec(String(version).trim());
  if (!found) throw new TypeError(`Invalid Version: ${version}`);
  const pre = found[4] ? found[4].split('.').map((id) => (/^\d+$/.test(id) ? Number(id) : id)) : [];
  return [Number(found[1]), Number(found[2]), Number(found[3]), ...pre];
}

/** semver's order: numbers by value and below strings, strings by code unit, a release above its pre-releases. */
export function compare(a: string, b: string): number {
  const left = identifiers(a);
  const right = identifiers(b);
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    const [x, y] = [left[i], right[i]];
    if (x === y) continue;
    // Past the core, the version that has run out of identifiers is the lower, unless that is the release itself.
    if (x === undefined) return i === 3 ? 1 : -1;
    if (y === undefined) return i === 3 ? -1 : 1;
    if (typeof x !== typeof y) return typeof x === 'number' ? -1 : 1;
    return x < y ? -1 : 1;
  }
  return 0;
}

export const gte = (a: string, b: string): boolean => compare(a, b) >= 0;
