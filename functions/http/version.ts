import { createRequire } from 'node:module';

/**
 * The running version, package.json's. The Lambda bundles get it written in by the bundler (`FLEETWARD_VERSION`,
 * lib/fleetward-function.ts) and so carry the version rather than the whole package.json (2.4 KB of every API
 * bundle); anywhere else it is read from the file.
 */
export const version: string = process.env.FLEETWARD_VERSION ?? (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
