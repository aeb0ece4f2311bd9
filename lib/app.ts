import { App, Validations, type AppProps } from 'aws-cdk-lib';
import nag from 'cdk-nag';
import { AwsLimitsChecks } from './aws-limits.ts';
import { SiteConfigError } from '#config/site-config.ts';
import { currentRelease, previousRelease, releaseRecord, UnknownReleaseError } from './releases.ts';
import { UpgradeChecks } from './upgrade-checks.ts';
import { loadSite, type LoadSiteOptions } from './site.ts';
import { SiteStack, stackNameOf } from './site-stack.ts';

const { AwsSolutionsChecks } = nag;

export interface SiteAppOptions extends LoadSiteOptions {
  /** The site to build, `sites/<name>.toml`; by default the app's `-c site=<name>` context. */
  site?: string;
  appProps?: AppProps;
}

/**
 * The CDK app of one site: its stack `Fleetward-<site>`, checked by cdk-nag's AwsSolutions pack (a violation
 * fails `cdk synth` and `cdk deploy`). Used by bin/cdk.ts and by the tests.
 */
export function buildSiteApp(options: SiteAppOptions = {}) {
  const app = new App(options.appProps);
  const name = options.site ?? (app.node.tryGetContext('site') as string | undefined);
  const agentUrl = options.agentUrl ?? (app.node.tryGetContext('agentUrl') as string | undefined);
  const site = loadSite(name, { ...(options.sitesDir ? { sitesDir: options.sitesDir } : {}), agentUrl });
  const stack = new SiteStack(app, stackNameOf(site.name), {
    site,
    // Environment-agnostic unless the CLI knows the target account (cdk deploy with credentials).
    env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  });
  // cdk-nag 3 is a policy validation plugin: a violation stops synthesis with a report; acknowledgments are
  // `Validations.of(construct).acknowledge(...)` next to the resource, each with its reason.
  // AWS's own limits that no other check knows (stream filters, concurrency, API timeouts): lib/aws-limits.ts.
  // The update from the release the site runs (or else the one before this) must be one CloudFormation takes.
  const deployed = site.config.site.deployed_release;
  const from = deployed === undefined ? previousRelease(currentRelease) : deployedRecord(site.name, deployed);
  Validations.of(app).addPlugins(
    new AwsSolutionsChecks(app, { verbose: true }),
    new AwsLimitsChecks({ accountConcurrency: site.config.lambda.account_concurrency }),
    ...(from ? [new UpgradeChecks(from, currentRelease)] : []),
  );
  return { app, stack, site };
}

function deployedRecord(siteName: string, release: string) {
  try {
    return releaseRecord(release);
  } catch (error) {
    if (error instanceof UnknownReleaseError) throw new SiteConfigError(`sites/${siteName}.toml: [site] deployed_release: ${error.message}`);
    throw error;
  }
}
