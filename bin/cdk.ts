// The CDK app: `npx cdk synth -c site=<name>` / `npx cdk deploy -c site=<name>` (cdk.json runs this file).
import { SiteConfigError } from '#config/site-config.ts';
import { buildSiteApp } from '#lib/app.ts';

try {
  buildSiteApp().app.synth();
} catch (error) {
  if (!(error instanceof SiteConfigError)) throw error;
  // A config problem is the user's to fix: one clear line, no stack trace.
  console.error(`fleetward: ${error.message}`);
  process.exit(1);
}
