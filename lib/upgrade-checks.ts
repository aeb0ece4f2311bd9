import { readFileSync } from 'node:fs';
import type { IPolicyValidationContext, IPolicyValidationPlugin, PolicyValidationPluginReport } from 'aws-cdk-lib';
import { releaseRecordOf, type ReleaseRecord } from './release-record.ts';
import { UPGRADE_RULES, upgradeViolations } from './upgrade-rules.ts';

/**
 * Refuses at synth a stack update that CloudFormation would refuse or do destructively, against the record of the
 * release the site runs (`[site] deployed_release`), or else the release before this one: so `cdk deploy` stops
 * before AWS does, and `npm test` fails on a table change that needs a release of its own.
 */
export class UpgradeChecks implements IPolicyValidationPlugin {
  readonly name = 'fleetward-upgrade';
  readonly ruleIds = Object.keys(UPGRADE_RULES);
  private readonly from: ReleaseRecord;
  private readonly to: string;
  constructor(from: ReleaseRecord, to: string) {
    this.from = from;
    this.to = to;
  }

  validate(context: IPolicyValidationContext): PolicyValidationPluginReport {
    const violations = context.templatePaths.flatMap((templatePath) => {
      const next = releaseRecordOf(JSON.parse(readFileSync(templatePath, 'utf8')), this.to, templatePath);
      return upgradeViolations(this.from, next).map((violation) => ({
        ruleName: violation.rule,
        description: `release ${this.from.release} → ${this.to}: ${violation.detail} (${UPGRADE_RULES[violation.rule]})`,
        fix:
          'split the change over releases, one index change each (docs/deploy.md, "Upgrading a site"); ' +
          '`npm run upgrade-plan -- --from <release>` lists the steps',
        violatingResources: [{ resourceLogicalId: violation.resource, templatePath, locations: [] }],
      }));
    });
    return { success: violations.length === 0, violations };
  }
}
