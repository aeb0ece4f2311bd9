import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';
import * as z from 'zod/mini';

// Process-wide settings for a deployed function, imported first by every handler module (handlers/*.ts) so that
// they hold before any other module is evaluated. esbuild defines FLEETWARD_LAMBDA_BUNDLE in the Lambda bundles
// (lib/fleetward-function.ts); the local runner and the tests import the same handlers without it and change nothing.

/**
 * zod compiles every object schema into a parser of its own (`new Function`) the first time it parses with it,
 * which pays off over many parses. A cold function parses the site config and one request with schemas it has
 * never used, and the compiling costs more than it saves (the config's first parse: 6.3 ms compiled, 3.0 ms not);
 * later parses differ by hundredths of a millisecond. zod reads the setting when it builds each schema.
 */
function parseWithoutCompiling(): void {
  z.config({ jitless: true });
}

/**
 * Stack traces pointing at the TypeScript sources, as `--enable-source-maps` gives them, without its price: Node
 * reads and parses the 0.9 MB map and measures every line of the bundle when it loads the module (≈ 10 ms of CPU at
 * every cold start), while this reads the map the first time a stack trace is formatted, which a healthy
 * invocation never does. Frames in the bundle get their original `file:line:column` (`functions/…`,
 * `node_modules/…`); function names stay the bundle's.
 */
function mapStackTracesLazily(bundleUrl: string): void {
  const bundleFile = fileURLToPath(bundleUrl);
  let map: SourceMap | null | undefined;
  const loadMap = () => {
    try {
      return new SourceMap(JSON.parse(readFileSync(`${bundleFile}.map`, 'utf8')) as ConstructorParameters<typeof SourceMap>[0]);
    } catch {
      return null;
    }
  };
  const frameText = (frame: NodeJS.CallSite): string => {
    const text = String(frame);
    const file = frame.getFileName();
    const line = frame.getLineNumber();
    const column = frame.getColumnNumber();
    if ((file !== bundleUrl && file !== bundleFile) || line === null || column === null) return text;
    map ??= loadMap();
    const origin = map?.findOrigin(line, column);
    if (!origin || !('fileName' in origin)) return text;
    // esbuild names the sources relative to the directory it wrote the bundle to: `../../functions/…` in cdk.out.
    const source = origin.fileName.replace(/^(\.\.\/)+/, '');
    return text.replace(`${file}:${line}:${column}`, `${source}:${origin.lineNumber}:${origin.columnNumber}`);
  };
  Error.prepareStackTrace = (error: unknown, frames: NodeJS.CallSite[]) => {
    let header: string;
    try {
      header = Error.prototype.toString.call(error);
    } catch {
      header = '<error>';
    }
    return [header, ...frames.map((frame) => `    at ${frameText(frame)}`)].join('\n');
  };
}

if (process.env.FLEETWARD_LAMBDA_BUNDLE) {
  parseWithoutCompiling();
  // Someone who sets NODE_OPTIONS=--enable-source-maps on the function gets Node's own mapping instead.
  if (!process.sourceMapsEnabled) mapStackTracesLazily(import.meta.url);
}
