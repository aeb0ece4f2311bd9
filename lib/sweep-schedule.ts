import { Duration } from 'aws-cdk-lib';
import { SiteConfigError } from '#config/site-config.ts';
import type { LoadedSite } from './site.ts';

/** EventBridge Scheduler's smallest rate, and its unit: a rate is a whole number of minutes. */
const SCHEDULER_MINUTE_SECONDS = 60;

/**
 * The sweep schedule's rate, `[sweep] interval_seconds`. A deployed site must ask for whole minutes, at least one:
 * anything else would be silently a different interval. The local sample (sites/local.toml, its 5 s meant for the
 * local runner's timer) is deployed only to LocalStack for inspection, and gets the smallest rate Scheduler has.
 */
export function sweepRate(site: LoadedSite): Duration {
  const seconds = site.config.sweep.interval_seconds;
  if (site.isLocalSample) return Duration.minutes(Math.max(1, Math.ceil(seconds / SCHEDULER_MINUTE_SECONDS)));
  if (seconds < SCHEDULER_MINUTE_SECONDS || seconds % SCHEDULER_MINUTE_SECONDS !== 0) {
    throw new SiteConfigError(
      `site ${site.name}: sweep.interval_seconds = ${seconds}, but EventBridge Scheduler runs the sweep ` +
        'in whole minutes, at least one: use 60, 120, ... (a shorter interval is for the local runner only)',
    );
  }
  return Duration.seconds(seconds);
}
