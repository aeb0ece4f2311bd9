import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { parseSiteConfig } from '#config/site-config.ts';
import { textLines } from '#local/log-sink.ts';
import { startLocalSite, type LocalSite } from '#local/runner.ts';
import type { Machine } from '#domain/core/model.ts';
import type { FleetStore } from '#store/port.ts';

// What the bench parts that run a whole local site share: the site file of a fast simulated site, and starting the
// site on the part's DynamoDB Local with the last lines it logged kept for error messages.

export interface FastSiteOptions {
  name: string;
  machineType: string;
  machines: number;
  racks: number;
  /** The agent's beat. */
  heartbeatIntervalSeconds: number;
  /** The site's heartbeat timeout; the config's default when absent. */
  heartbeatTimeoutSeconds?: number;
}

/** A site whose simulated agent provisions and cleans in 20 ms and whose creates retry after 10 ms. */
export const fastSiteToml = (o: FastSiteOptions): string => `
[site]
name = "${o.name}"
${o.heartbeatTimeoutSeconds === undefined ? '' : `[heartbeat]\ntimeout_seconds = ${o.heartbeatTimeoutSeconds}\n`}[instance_create_retry]
base_delay_ms = 10
timeout_ms = 2000
[simulator]
machines = [ { type = "${o.machineType}", count = ${o.machines}, racks = ${o.racks} } ]
heartbeat_interval_seconds = ${o.heartbeatIntervalSeconds}
provision_ms = 20
cleanup_ms = 20
`;

export interface BenchSiteOptions {
  endpoint: string;
  tableName: string;
  toml: string;
  sweepIntervalMs: number;
  streamPoller?: boolean;
  /** Every API request served as by a Lambda container of its own (local/runner.ts). */
  containerPerRequest?: boolean;
  /** Each line the site logs, for the part to report or count what concerns it. */
  onLine?: (line: string) => void;
  /** The store's DynamoDB client, before the site's first request (registration included). */
  onStoreClient?: (client: DynamoDBDocumentClient) => void;
}

/** Lines of the site's log kept for an error message. */
const KEPT_LINES = 50;

/**
 * A site config for a part: as its TOML says, but without validation after registration unless the TOML asks for it.
 * The parts measure other workflows; commissioning the seeded fleet would add its own agent calls to each start.
 */
function benchConfig(toml: string, source: string) {
  const config = parseSiteConfig(toml, source);
  return /^\[validation\]/m.test(toml)
    ? config
    : { ...config, validation: { ...config.validation, after: config.validation.after.filter((r) => r !== 'registration') } };
}

export async function startBenchSite(o: BenchSiteOptions): Promise<{ site: LocalSite; siteLog: string[] }> {
  const siteLog: string[] = [];
  const site = await startLocalSite({
    config: benchConfig(o.toml, `${o.tableName} site config`),
    port: 0,
    dynamoEndpoint: o.endpoint,
    tableNames: { table: o.tableName, idempotencyTable: `${o.tableName}-idempotency` },
    sweepIntervalMs: o.sweepIntervalMs,
    ...(o.streamPoller === undefined ? {} : { streamPoller: o.streamPoller }),
    ...(o.containerPerRequest === undefined ? {} : { containerPerRequest: o.containerPerRequest }),
    ...(o.onStoreClient === undefined ? {} : { onStoreClient: o.onStoreClient }),
    log: textLines((line) => {
      siteLog.push(line);
      if (siteLog.length > KEPT_LINES) siteLog.shift();
      o.onLine?.(line);
    }),
  });
  return { site, siteLog };
}

/** A warning or error line of the local runner's own components. */
export const warnsOrFails = (line: string): boolean => /^\S+\s+(warn|error)\b/.test(line);

/** Every machine of a type's allocatable index (up to `limit`), read from the table: what a bench waits on before it starts. */
export async function freeMachines(store: FleetStore, machineType: string, limit: number): Promise<Machine[]> {
  return [...(await store.getMachines(await store.allocatableMachineIds(machineType, limit))).values()];
}
