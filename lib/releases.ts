import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import semver from 'semver';
import { version } from '#http/version.ts';
import type { ReleaseRecord } from './release-record.ts';

/** releases/<version>.json: one record per release, the table's and the retained resources' shape as deployed. */
export const RELEASES_DIR = fileURLToPath(new URL('../releases/', import.meta.url));

/** The release this code is: package.json's version. */
export const currentRelease: string = version;

export function releaseRecords(dir = RELEASES_DIR): ReleaseRecord[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.json') && semver.valid(name.slice(0, -'.json'.length)))
    .map((name) => JSON.parse(readFileSync(join(dir, name), 'utf8')) as ReleaseRecord)
    .sort((a, b) => semver.compare(a.release, b.release));
}

export class UnknownReleaseError extends Error {}

export function releaseRecord(release: string, dir = RELEASES_DIR): ReleaseRecord {
  const found = releaseRecords(dir).find((record) => record.release === release);
  if (!found)
    throw new UnknownReleaseError(
      `release ${release} has no record in releases/ (known: ${releaseRecords(dir)
        .map((r) => r.release)
        .join(', ')})`,
    );
  return found;
}

/** The release before `release`: what a site runs when `release` is deployed over it. */
export function previousRelease(release: string, dir = RELEASES_DIR): ReleaseRecord | undefined {
  return releaseRecords(dir)
    .filter((record) => semver.lt(record.release, release))
    .at(-1);
}
