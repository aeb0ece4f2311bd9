/**
 * Stands in for `semver` in the Lambda bundles (an esbuild alias set by fleetward-function.ts). Its one user there
 * is aws-xray-sdk-core (through Powertools Tracer), whose AWS SDK v2 patcher (`captureAWS`, which Fleetward never
 * calls: it traces SDK v3 clients) checks `semver.gte(AWS.VERSION, minimum)`; the whole package is ≈ 29 KB of every
 * bundle and evaluating it ≈ 4 ms of every cold start. This is `gte` as semver 7 defines it for SemVer 2.0 strings
 * (build metadata ignored, a pre-release below its release); anything else of semver's is absent here.
 */

const pattern = /^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;

function parse(version: string): { core: number[]; pre: string[] } {
  const found = pattern.exec(String(version).trim());
  if (!found) throw new TypeError(`Invalid Version: ${version}`);
  return { core: [Number(found[1]), Number(found[2]), Number(found[3])], pre: found[4] ? found[4].split('.') : [] };
}

const numeric = /^\d+$/;

function compareIdentifiers(a: string, b: string): number {
  const aNumeric = numeric.test(a);
  const bNumeric = numeric.test(b);
  if (aNumeric && bNumeric) return Math.sign(Number(a) - Number(b));
  if (aNumeric !== bNumeric) return aNumeric ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

export function compare(a: string, b: string): number {
  const left = parse(a);
  const right = parse(b);
  for (let i = 0; i < 3; i++) if (left.core[i] !== right.core[i]) return Math.sign(left.core[i]! - right.core[i]!);
  if (left.pre.length === 0 || right.pre.length === 0) return Math.sign(right.pre.length - left.pre.length);
  for (let i = 0; i < Math.max(left.pre.length, right.pre.length); i++) {
    if (left.pre[i] === undefined) return -1;
    if (right.pre[i] === undefined) return 1;
    const order = compareIdentifiers(left.pre[i]!, right.pre[i]!);
    if (order !== 0) return order;
  }
  return 0;
}

export const gte = (a: string, b: string): boolean => compare(a, b) >= 0;
