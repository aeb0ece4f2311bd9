// `npm run upgrade-plan -- --from <release>`: the steps that take a site from the release it runs to this one. Each
// step is a release deployed in turn (`[site] deployed_release` names the one before it, so `cdk synth` checks the
// update), with the table changes it makes (at most one index per stack update) and the data migrations it runs.
import { parseArgs } from 'node:util';
import semver from 'semver';
import { currentRelease, releaseRecord, releaseRecords, UnknownReleaseError } from '#lib/releases.ts';
import { indexChanges, upgradeViolations, describeViolation } from '#lib/upgrade-rules.ts';
import { migrations } from '#store/migrations/registry.ts';
import { migrationSummaries } from '#store/migrations/summaries.ts';
import type { ReleaseRecord } from '#lib/release-record.ts';

export interface UpgradeStep {
  from: string;
  to: string;
  tableChanges: string[];
  migrations: string[];
  refused: string[];
}

export function upgradePlan(from: string, to = currentRelease, records: ReleaseRecord[] = releaseRecords()): UpgradeStep[] {
  const path = records.filter((record) => semver.gt(record.release, from) && semver.lte(record.release, to));
  let before = releaseRecord(from);
  return path.map((record) => {
    const tableChanges = Object.entries(before.tables).flatMap(([logicalId, table]) => {
      const next = record.tables[logicalId];
      if (!next) return [];
      const changes = indexChanges(table, next);
      return [...changes.create.map((name) => `${logicalId}: create index ${name}`), ...changes.delete.map((name) => `${logicalId}: delete index ${name}`)];
    });
    const step: UpgradeStep = {
      from: before.release,
      to: record.release,
      tableChanges,
      migrations: migrations
        .filter((m) => m.release === record.release)
        .map((m) => `${m.id} ${m.name} (${m.kind}): ${migrationSummaries[m.id] ?? 'no summary'}`),
      refused: upgradeViolations(before, record).map(describeViolation),
    };
    before = record;
    return step;
  });
}

export function renderPlan(from: string, steps: UpgradeStep[]): string {
  if (steps.length === 0) return `release ${from} is this release (${currentRelease}) or newer: nothing to do`;
  const lines = [`From release ${from} to ${currentRelease}: ${steps.length} step(s), each one \`cdk deploy\` of its release, in order.`];
  for (const [at, step] of steps.entries()) {
    lines.push('', `${at + 1}. release ${step.to} over ${step.from} (set [site] deployed_release = "${step.from}", check out release ${step.to}, cdk deploy)`);
    lines.push(`   table: ${step.tableChanges.length === 0 ? 'no change' : step.tableChanges.join('; ')}`);
    for (const migration of step.migrations) lines.push(`   migration ${migration}`);
    lines.push(`   then: wait for \`fleetward admin migrations\` to show every migration done before the next step`);
    for (const refusal of step.refused) lines.push(`   REFUSED: ${refusal}`);
  }
  return lines.join('\n');
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { from: { type: 'string' } } });
  if (!values.from || !semver.valid(values.from)) {
    console.error('usage: npm run upgrade-plan -- --from <release>, e.g. --from 0.1.0');
    process.exit(2);
  }
  try {
    const steps = upgradePlan(values.from);
    console.log(renderPlan(values.from, steps));
    if (steps.some((step) => step.refused.length > 0)) process.exit(1);
  } catch (error) {
    if (!(error instanceof UnknownReleaseError)) throw error;
    console.error(error.message);
    process.exit(2);
  }
}
