// `npm start`: the whole site on this machine. See README "The two commands" and docs/guide.md "The local site".
import '#local/xray-manual-mode.ts';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { checkRouteOverrides, parseSiteConfig, SiteConfigError } from '#config/site-config.ts';
import { apiRouteSpecs, routeKeyOf } from '#lib/api-routes.ts';
import { AWS_CALL_LOG_ENV } from '#local/aws-call-recorder.ts';
import { JavaMissingError } from '#local/dynamodb-local.ts';
import { jsonLines, LOG_FORMATS, logFormatFor, prettyLines, type LogFormat, type LogSink } from '#local/log-sink.ts';
import { startLocalSite } from '#local/runner.ts';
import { demoFleet } from '#local/site-agent/demo-fleet.ts';
import { summarizedLines } from '#local/terminal-summary.ts';
import { parseStreamChaos, StreamChaosConfigError } from '#local/stream-chaos.ts';
import { AWS_SEMANTICS_MODES, AwsSemanticsConfigError, parseAwsSemantics } from '#local/aws-semantics/config.ts';

const configPath = process.env.FLEETWARD_SITE_CONFIG ?? 'sites/local.toml';
const port = Number(process.env.PORT ?? 8080);
const persistDir = process.env.FLEETWARD_DATA_DIR;
const awsCallLogDir = process.env[AWS_CALL_LOG_ENV];
// A deploy in progress: the table stays in the layout of the release before (local/runner.ts startMigrations).
const holdMigrations = process.env.FLEETWARD_HOLD_MIGRATIONS === '1';
// FLEETWARD_AGENT=reference runs the reference agent (agent/, docs/agent.md) for the demo fleet instead of the simulator.
const agent = process.env.FLEETWARD_AGENT ?? 'simulator';
if (agent !== 'simulator' && agent !== 'reference') {
  console.error(`FLEETWARD_AGENT=${agent}: not simulator or reference`);
  process.exit(1);
}
const usage = 'options: --log-level <debug|info|warn|error>, --log-format <pretty|json>';

/** `npm start -- --log-level debug --log-format json`; LOG_LEVEL otherwise (Powertools' levels: debug, info, warn, error...). */
function optionsOf(args: string[]): { logLevel: string | undefined; logFormat: LogFormat | undefined } {
  try {
    const { values } = parseArgs({ args, options: { 'log-level': { type: 'string' }, 'log-format': { type: 'string' } } });
    const logFormat = values['log-format'];
    if (logFormat !== undefined && !LOG_FORMATS.includes(logFormat as LogFormat)) throw new Error(`unknown --log-format ${logFormat}`);
    return { logLevel: values['log-level'] ?? process.env.LOG_LEVEL, logFormat: logFormat as LogFormat | undefined };
  } catch (error) {
    console.error(`${(error as Error).message}; ${usage}`);
    process.exit(1);
  }
}
const { logLevel, logFormat } = optionsOf(process.argv.slice(2));

/**
 * Short readable lines on a terminal, JSON for a pipe or a file, unless --log-format says which. Short lines leave
 * out the routine ones each machine makes, told a line per phase instead, unless the level is debug.
 */
function logSink(machines: number): LogSink {
  const write = (line: string) => console.log(line);
  const format = logFormatFor(logFormat, process.stdout.isTTY === true);
  if (format === 'json') return jsonLines(write);
  const pretty = prettyLines(write, { colour: process.stdout.isTTY === true && !process.env.NO_COLOR });
  return logLevel?.toLowerCase() === 'debug' ? pretty : summarizedLines(pretty, machines);
}

/**
 * How long a stop waits for the work in flight (a sweep, a stream batch) to finish. A busy start (32 machines
 * registering and validating, on a loaded host) could hold it for many seconds; ending without that work is a crash
 * the next start recovers from, like any other.
 */
const STOP_GRACE_MS = 2_000;

/**
 * Stops the site on SIGINT (Ctrl-C), SIGTERM and SIGHUP (the terminal closed), and when the npm process that started
 * it is gone, since nothing would forward a signal to it any more. A second signal, or work in flight past the grace,
 * ends the process at once; java still goes with it, as DynamoDB Local's wrapper ends java when our end of its pipe
 * closes (local/dynamodb-local.ts).
 */
function stopOnSignals(stop: () => Promise<void>): void {
  let stopping = false;
  const shutdown = async (why: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${why}: stopping…`);
    const grace = new Promise<false>((resolve) => setTimeout(() => resolve(false), STOP_GRACE_MS).unref());
    if (!(await Promise.race([stop().then(() => true), grace]))) {
      console.log(`the work in flight did not end within ${STOP_GRACE_MS / 1000} s: stopped without it (the next start finishes it)`);
    }
    process.exit(0);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => (stopping ? process.exit(1) : void shutdown(signal)));
  // A pipe whose reader went away (`npm start | head`) ends the run rather than the process mid-write.
  process.stdout.on('error', () => void shutdown('output closed'));
  if (process.env.npm_lifecycle_event !== undefined) {
    const parent = process.ppid;
    setInterval(() => {
      if (process.ppid !== parent) void shutdown('npm is gone');
    }, 1_000).unref();
  }
}

try {
  const config = parseSiteConfig(readFileSync(configPath, 'utf8'), configPath);
  checkRouteOverrides(config, apiRouteSpecs().map(routeKeyOf), configPath);
  const streamChaos = parseStreamChaos(process.env);
  const awsSemantics = parseAwsSemantics(process.env);
  const machines = demoFleet(config.simulator.machines).length;
  const log = logSink(machines);
  const site = await startLocalSite({
    config,
    port,
    log,
    ...(persistDir ? { persistDir } : {}),
    ...(streamChaos ? { streamChaos } : {}),
    ...(awsSemantics ? { awsSemantics } : {}),
    ...(logLevel ? { logLevel } : {}),
    ...(awsCallLogDir ? { awsCallLogDir } : {}),
    ...(holdMigrations ? { startMigrations: false } : {}),
    agent,
  });
  stopOnSignals(site.stop);
  log.part('runner', `${machines} machines registered`);
  console.log(`
Fleetward local site "${config.site.name}" is up.
  API            ${site.url}
  dashboard      ${site.url}/dashboard/
  health         ${site.url}/health
  metrics        ${site.url}/metrics (Prometheus text)
  site agent     simulated, ${site.simulator.url} (controls under ${site.url}/_sim/)
  dev token      curl -s -X POST ${site.url}/_local/token -d '{"sub":"me","org":"acme","roles":["tenant"]}'
Press Ctrl-C to stop.`);
  if (awsSemantics) {
    const off = AWS_SEMANTICS_MODES.filter((mode) => !awsSemantics.modes.includes(mode));
    console.log(
      `AWS semantics on: ${awsSemantics.modes.join(', ')} (FLEETWARD_AWS_SEMANTICS_SEED=${awsSemantics.seed} replays this run)` +
        (off.length > 0 ? `; off: ${off.join(', ')}` : ''),
    );
  }
} catch (error) {
  if (
    error instanceof JavaMissingError ||
    error instanceof SiteConfigError ||
    error instanceof StreamChaosConfigError ||
    error instanceof AwsSemanticsConfigError
  ) {
    console.error(error.message);
    process.exit(1);
  }
  throw error;
}
