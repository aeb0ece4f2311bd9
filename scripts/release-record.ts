// `npm run release-record`: writes releases/<version>.json for this code's release, from the synthesized stack of the
// sample site (bundling skipped). `-- --template <file> --release <v> --source <text>` records another template, as
// release 0.1.0's was made from its commit's synthesized template. test/cdk/releases.test.ts fails while the
// current release's record is not the synthesized one.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildSiteApp } from '#lib/app.ts';
import { releaseRecordOf } from '#lib/release-record.ts';
import { currentRelease, RELEASES_DIR } from '#lib/releases.ts';
import cdkJson from '../cdk.json' with { type: 'json' };

export const RECORD_SITE = 'example-aws';

export function synthesizedTemplate(site = RECORD_SITE): Record<string, unknown> {
  const outdir = mkdtempSync(join(tmpdir(), 'fleetward-release-'));
  try {
    const built = buildSiteApp({ site, appProps: { outdir, context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } } });
    try {
      built.app.synth();
    } catch {
      // A refused update still writes its template: the record is what the code would deploy.
    }
    return JSON.parse(readFileSync(join(outdir, `${built.stack.artifactId}.template.json`), 'utf8')) as Record<string, unknown>;
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { template: { type: 'string' }, release: { type: 'string' }, source: { type: 'string' } } });
  const release = values.release ?? currentRelease;
  const template = values.template ? JSON.parse(readFileSync(values.template, 'utf8')) : synthesizedTemplate();
  const source = values.source ?? `this code's synthesized stack (site ${RECORD_SITE})`;
  const file = join(RELEASES_DIR, `${release}.json`);
  writeFileSync(file, `${JSON.stringify(releaseRecordOf(template, release, source), null, 2)}\n`);
  console.log(`wrote ${file}`);
}
