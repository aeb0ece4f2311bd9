import { readFile } from 'node:fs/promises';
import type { OpenApiDocument } from '#http/openapi.ts';
import type { Route } from '#http/route.ts';

/** The file a deployed API bundle ships next to its code, holding the document generated at synth. */
export const BUNDLED_OPENAPI_FILE = 'openapi.json';

/**
 * The document `GET /openapi.json` serves. A deployed API function reads the one generated from this same route
 * table at synth (lib/api-routes.ts) and shipped beside the bundle (lib/fleetward-function.ts): the generator
 * (zod-to-openapi and zod's JSON Schema code, ≈ 35 KB minified) stays out of the bundle. The bundler defines
 * `process.env.FLEETWARD_BUNDLED_OPENAPI`, which drops the generator's import from the bundle; anywhere else
 * (local runner, tests) the document is generated on first use.
 */
export async function servedOpenApiDocument(table: () => readonly Route[]): Promise<OpenApiDocument> {
  // An if/else on the defined value: esbuild drops the dead branch, and with it the generator's import.
  if (process.env.FLEETWARD_BUNDLED_OPENAPI) {
    return JSON.parse(await readFile(new URL(`./${BUNDLED_OPENAPI_FILE}`, import.meta.url), 'utf8')) as OpenApiDocument;
  } else {
    const { openApiDocument } = await import('#http/openapi.ts');
    return openApiDocument(table());
  }
}
