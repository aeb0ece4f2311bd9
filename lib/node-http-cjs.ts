import { createRequire } from 'node:module';

/**
 * Stands in for `node:http` in the Lambda bundles (an esbuild alias set by fleetward-function.ts). Node's ES module
 * facade of `node:http` reads every export, and its WebSocket getters load undici: 60-80 ms of a cold start here,
 * where `require` takes under a millisecond. The SDK and middy only need these names; a bundle that imports
 * another fails to build.
 */
const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');

export const { Agent, request, STATUS_CODES } = http;
export default http;
