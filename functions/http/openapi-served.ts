import { readFile } from 'node:fs/promises';
import type { OpenApiDocument } from '#http/openapi.ts';

/** The file a deployed API bundle ships next to its code, holding the document generated at synth. */
export const BUNDLED_OPENAPI_FILE = 'openapi.json';

/**
 * The document `GET /openapi.json` serves: the whole route table's. A deployed API function reads the one generated
 * at synth (lib/api-routes.ts) and shipped beside the bundle (lib/fleetward-function.ts): neither the generator
 * (zod-to-openapi and zod's JSON Schema code, ≈ 35 KB minified) nor the other groups' routes are in its bundle. The
 * bundler defines `process.env.FLEETWARD_BUNDLED_OPENAPI`, which drops both imports from the bundle; anywhere else
 * (local runner, tests) the document is generated from the table on first use.
 */
export async function servedOpenApiDocument(): Promise<OpenApiDocument> {
  // An if/else on the defined value: esbuild drops the dead branch, and with it the generator's and the table's imports.
  if (process.env.FLEETWARD_BUNDLED_OPENAPI) {
    return JSON.parse(await readFile(new URL(`./${BUNDLED_OPENAPI_FILE}`, import.meta.url), 'utf8')) as OpenApiDocument;
  } else {
    const [{ openApiDocument }, { routes }] = await Promise.all([import('#http/openapi.ts'), import('#http/routes/index.ts')]);
    return openApiDocument(routes);
  }
}
