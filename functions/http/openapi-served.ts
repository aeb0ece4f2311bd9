import { readFile } from 'node:fs/promises';
import type { OpenApiDocument } from './openapi.ts';
import type { Route } from './route.ts';

/** The file a deployed API bundle ships next to its code, holding the document generated at synth. */
export const BUNDLED_OPENAPI_FILE = 'openapi.json';

/**
 * The document `GET /openapi.json` serves. A deployed API function reads the one lib/fleetward-function.ts
 * generated from this same route table at synth and shipped beside the bundle: the generator (zod-to-openapi and
 * zod's JSON Schema code) would be a tenth of every API bundle and a slice of its cold start. The bundler defines
 * `process.env.FLEETWARD_BUNDLED_OPENAPI`, which drops the generator's import from the bundle; anywhere else
 * (local runner, tests) the document is generated on first use.
 */
export async function servedOpenApiDocument(table: () => Route[]): Promise<OpenApiDocument> {
  if (process.env.FLEETWARD_BUNDLED_OPENAPI) {
    return JSON.parse(await readFile(new URL(`./${BUNDLED_OPENAPI_FILE}`, import.meta.url), 'utf8')) as OpenApiDocument;
  } else {
    const { openApiDocument } = await import('./openapi.ts');
    return openApiDocument(table());
  }
}
