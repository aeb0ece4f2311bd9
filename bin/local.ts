// `npm start`: the whole site on this machine. See README "The two commands".
import '#local/xray-manual-mode.ts';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { checkRouteOverrides, parseSiteConfig, SiteConfigError } from '#config/site-config.ts';
import { apiRouteSpecs, routeKeyOf } from '#lib/api-routes.ts';
import { AWS_CALL_LOG_ENV } from '#local/aws-call-recorder.ts';
import { JavaMissingError } from '#local/dynamodb-local.ts';
import { startLocalSite } from '#local/site.ts';
import { parseStreamChaos, StreamChaosConfigError } from '#local/stream-chaos.ts';

const configPath = process.env.FLEETWARD_SITE_CONFIG ?? 'sites/local.toml';
const port = Number(process.env.PORT ?? 8080);
const persistDir = process.env.FLEETWARD_DATA_DIR;
const awsCallLogDir = process.env[AWS_CALL_LOG_ENV];

/** `npm start -- --log-level debug`; LOG_LEVEL otherwise (Powertools' levels: debug, info, warn, error...). */
function logLevelOf(args: string[]): string | undefined {
  try {
    return parseArgs({ args, options: { 'log-level': { type: 'string' } } }).values['log-level'] ?? process.env.LOG_LEVEL;
  } catch (error) {
    console.error(`${(error as Error).message}; the only option is --log-level <debug|info|warn|error>`);
    process.exit(1);
  }
}
const logLevel = logLevelOf(process.argv.slice(2));

try {
  const config = parseSiteConfig(readFileSync(configPath, 'utf8'), configPath);
  checkRouteOverrides(config, apiRouteSpecs().map(routeKeyOf), configPath);
  const streamChaos = parseStreamChaos(process.env);
  const site = await startLocalSite({
    config,
    port,
    ...(persistDir ? { persistDir } : {}),
    ...(streamChaos ? { streamChaos } : {}),
    ...(logLevel ? { logLevel } : {}),
    ...(awsCallLogDir ? { awsCallLogDir } : {}),
  });
  console.log(`
Fleetward local site "${config.site.name}" is up.
  API            ${site.url}
  health         ${site.url}/health
  metrics        ${site.url}/metrics (Prometheus text)
  site agent     simulated, ${site.simulator.url} (controls under ${site.url}/_sim/)
  dev token      curl -s -X POST ${site.url}/_local/token -d '{"sub":"me","org":"acme","roles":["tenant"]}'
Press Ctrl-C to stop.`);
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${signal}: stopping…`);
    await site.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
} catch (error) {
  if (error instanceof JavaMissingError || error instanceof SiteConfigError || error instanceof StreamChaosConfigError) {
    console.error(error.message);
    process.exit(1);
  }
  throw error;
}
