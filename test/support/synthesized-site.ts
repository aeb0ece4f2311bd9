import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { buildSiteApp } from '#lib/app.ts';
import type { SiteStack } from '#lib/site-stack.ts';
import cdkJson from '../../cdk.json' with { type: 'json' };

export interface SynthesizedSite {
  outdir: string;
  stack: SiteStack;
  template: Template;
  /** Validation failures stop synth: the cdk-nag test reports them, with the report. */
  synthError: Error | undefined;
  nagViolations: Array<{ ruleName: string; violatingConstructs: Array<{ constructPath: string }> }>;
  acknowledgments: Array<{ path: string; id: string; reason: string }>;
  remove(): void;
}

/**
 * One synthesis of a sample site, bundling skipped: its template, its cdk-nag validation report and the
 * acknowledgments recorded on its constructs. Synthesize once per test file (beforeAll).
 */
export function synthesizeSite(site: string): SynthesizedSite {
  const outdir = mkdtempSync(join(tmpdir(), 'fleetward-cdk-'));
  const built = buildSiteApp({ site, appProps: { outdir, context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } } });
  let synthError: Error | undefined;
  try {
    built.app.synth();
  } catch (error) {
    synthError = error as Error;
  }
  const template = Template.fromJSON(JSON.parse(readFileSync(join(outdir, `${built.stack.artifactId}.template.json`), 'utf8')));
  const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as {
    pluginReports: Array<{ pluginName: string; violations: SynthesizedSite['nagViolations'] }>;
  };
  const acknowledgments = built.app.node
    .findAll()
    .flatMap((construct) =>
      construct.node.metadata
        .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
        .flatMap((entry) => Object.entries(entry.data as Record<string, string>).map(([id, reason]) => ({ path: construct.node.path, id, reason }))),
    );
  return {
    outdir,
    stack: built.stack,
    template,
    synthError,
    nagViolations: report.pluginReports.flatMap((plugin) => plugin.violations),
    acknowledgments,
    remove: () => rmSync(outdir, { recursive: true, force: true }),
  };
}
