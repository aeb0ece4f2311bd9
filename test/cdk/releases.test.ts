import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SiteConfigError } from '#config/site-config.ts';
import { buildSiteApp } from '#lib/app.ts';
import { releaseRecordOf } from '#lib/release-record.ts';
import { currentRelease, previousRelease, releaseRecord } from '#lib/releases.ts';
import { UpgradeChecks } from '#lib/upgrade-checks.ts';
import cdkJson from '../../cdk.json' with { type: 'json' };

// The release records (releases/<version>.json) against the stack this code synthesizes: the current one must be
// what it deploys, and the update from the release a site runs must be one CloudFormation takes.

const sitesDir = mkdtempSync(join(tmpdir(), 'fleetward-sites-'));
const outdir = mkdtempSync(join(tmpdir(), 'fleetward-cdk-'));
const siteFile = (deployed: string) => readFileSync('sites/example-aws.toml', 'utf8').replace('[site]\n', `[site]\ndeployed_release = "${deployed}"\n`);
const build = (deployed: string, out = outdir) => {
  writeFileSync(join(sitesDir, 'example-aws.toml'), siteFile(deployed));
  return buildSiteApp({ site: 'example-aws', sitesDir, appProps: { outdir: out, context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } } });
};
let templatePath: string;
let synthError: Error | undefined;

beforeAll(() => {
  const built = build(previousRelease(currentRelease)!.release);
  try {
    built.app.synth();
  } catch (error) {
    synthError = error as Error;
  }
  templatePath = join(outdir, `${built.stack.artifactId}.template.json`);
}, 120_000);

afterAll(() => {
  rmSync(sitesDir, { recursive: true, force: true });
  rmSync(outdir, { recursive: true, force: true });
});

describe('the release records', () => {
  it("hold this release's table as the stack synthesizes it (after a change: npm run release-record)", () => {
    const synthesized = releaseRecordOf(JSON.parse(readFileSync(templatePath, 'utf8')), currentRelease, 'synthesized');
    const { source: _source, ...recorded } = releaseRecord(currentRelease);
    const { source: _synthesized, ...now } = synthesized;
    expect(now).toEqual(recorded);
  });

  it('let a site that runs the release before deploy this one: synth with that deployed_release passes its checks', () => {
    expect(synthError?.message).toBeUndefined();
    expect(previousRelease(currentRelease)?.release).toBe('0.2.0');
  });

  it('let a site that runs release 0.1.0 deploy this one too: one index change between their tables', () => {
    const report = new UpgradeChecks(releaseRecord('0.1.0'), currentRelease).validate({ templatePaths: [templatePath] } as never);
    expect(report.violations).toEqual([]);
  });

  it("refuse at synth an update the site's release cannot take, naming the rule and the table", () => {
    const before = structuredClone(releaseRecord('0.1.0'));
    before.tables.TableCD117FA1!.globalSecondaryIndexes.due!.projection = { type: 'KEYS_ONLY' };
    const report = new UpgradeChecks(before, currentRelease).validate({ templatePaths: [templatePath] } as never);
    expect(report.success).toBe(false);
    expect(report.violations.map((v) => [v.ruleName, v.violatingResources[0]?.resourceLogicalId])).toEqual([['one-index-change-per-update', 'TableCD117FA1']]);
    expect(report.violations[0]!.description).toContain('delete due, create allocatableByDomain, create due');
  });

  it('refuse a deployed_release with no record, in one line', () => {
    expect(() => build('0.0.7')).toThrow(SiteConfigError);
    expect(() => build('0.0.7')).toThrow(/deployed_release: release 0.0.7 has no record in releases\/ \(known: 0\.1\.0, 0\.2\.0, 0\.3\.0\)/);
  });
});
