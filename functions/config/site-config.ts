import * as z from 'zod/mini';
import '#config/zod-messages.ts';
import { parse as parseToml } from 'smol-toml';
import { ROSTER_PART_COUNTS } from '#config/roster-parts.ts';

// Every section is strict so that a misspelt key stops start-up instead of being silently ignored.
const section = <T extends z.core.$ZodLooseShape>(shape: T) => z.prefault(z.strictObject(shape), {} as never);

const simulatedMachineGroup = z.strictObject({
  type: z.string().check(z.minLength(1)),
  count: z.int().check(z.minimum(1), z.maximum(100_000)),
  racks: z._default(z.int().check(z.minimum(1)), 1),
  // Machines per NVLink domain (18 trays in a GB200 NVL72 rack), numbered within the type; absent: no domains.
  nvlink_domain_size: z.optional(z.int().check(z.minimum(1), z.maximum(100_000))),
});

/** API Gateway's route key: the method and the path template as the route table spells them. */
const routeKey = z.string().check(z.regex(/^(GET|POST|PUT|PATCH|DELETE) \/\S*$/, 'a route key is "<METHOD> <path>", e.g. "POST /v2/org/{org}/nico/instance"'));

// API Gateway HTTP API throttles: a steady rate (requests/s, a token bucket's refill) and a burst (its size).
const throttle = {
  rate_limit: z.number().check(z.gt(0)),
  burst_limit: z.int().check(z.minimum(0)),
};

const awsId = (prefix: string, what: string) =>
  z.string().check(z.regex(new RegExp(`^${prefix}-([0-9a-f]{8}|[0-9a-f]{17})$`), `a ${what} id, ${prefix}-<8 or 17 hex digits>`));

/**
 * Where the functions that call the site agent run when it is reachable only inside a VPC (over a VPN or PrivateLink).
 * Imported by id: synth makes no AWS lookups. Lambda takes at most 16 subnets and 5 security groups.
 */
const agentVpc = z
  .strictObject({
    vpc_id: awsId('vpc', 'VPC'),
    subnet_ids: z.array(awsId('subnet', 'subnet')).check(z.minLength(1), z.maxLength(16)),
    security_group_ids: z.array(awsId('sg', 'security group')).check(z.minLength(1), z.maxLength(5)),
    // The VPC endpoints the functions then need (DynamoDB, EventBridge, Secrets Manager): made by the stack unless the
    // VPC has them already (two endpoints of one service with private DNS cannot share a VPC).
    create_endpoints: z._default(z.boolean(), true),
    // The DynamoDB gateway endpoint's routes go into these: the route tables of the subnets above.
    route_table_ids: z._default(z.array(awsId('rtb', 'route table')).check(z.maxLength(16)), []),
  })
  .check(
    z.refine((vpc) => !vpc.create_endpoints || vpc.route_table_ids.length > 0, {
      message: "the DynamoDB gateway endpoint needs the subnets' route tables (or set create_endpoints = false when the VPC has its endpoints)",
      path: ['route_table_ids'],
    }),
  );

/** A secret's full ARN, with the 6 characters Secrets Manager appends to its name: IAM grants on exactly that ARN. */
const secretArn = z
  .string()
  .check(
    z.regex(
      /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6}$/,
      'the full ARN of a Secrets Manager secret, ending in the 6 characters Secrets Manager added to its name',
    ),
  );

export const siteConfigSchema = z.strictObject({
  site: section({
    name: z._default(z.string().check(z.regex(/^[a-z0-9][a-z0-9-]*$/, 'lower-case letters, digits and dashes')), 'local'),
    agent_url: z.optional(z.url()),
    // Where the site is, as a tenant's node records name it (GET /v2/org/{org}/nico/nodes).
    region: z._default(z.string().check(z.regex(/^[a-z0-9][a-z0-9-]*$/, 'lower-case letters, digits and dashes')), 'dc1'),
    // The release the deployed site runs (releases/<version>.json): `cdk synth` checks the update against it.
    deployed_release: z.optional(z.string().check(z.regex(/^\d+\.\d+\.\d+$/, 'a release version such as 0.1.0'))),
  }),
  catalog: section({
    // GPUs per machine of a type, for the tenant's capacity in GPUs; a type without an entry counts 0 (GET /admin/config names it).
    gpus_per_machine: z._default(z.record(z.string().check(z.minLength(1)), z.int().check(z.minimum(0), z.maximum(1024))), { gb200: 4, h100: 8 }),
  }),
  auth: section({
    issuer: z._default(z.string().check(z.minLength(1)), 'https://fleetward.local/'),
    audience: z._default(z.string().check(z.minLength(1)), 'fleetward'),
  }),
  auto_machine_repair_plugin: section({ enabled: z._default(z.boolean(), true) }),
  dashboard: section({ enabled: z._default(z.boolean(), true) }),
  instance_create_retry: section({
    max_attempts: z._default(z.int().check(z.minimum(1), z.maximum(10)), 3),
    base_delay_ms: z._default(z.int().check(z.minimum(0), z.maximum(10_000)), 250),
    timeout_ms: z._default(z.int().check(z.minimum(100), z.maximum(120_000)), 10_000),
  }),
  heartbeat: section({ timeout_seconds: z._default(z.int().check(z.minimum(1), z.maximum(86_400)), 30) }),
  meta_instance: section({
    max_consecutive_failures: z._default(z.int().check(z.minimum(1), z.maximum(100)), 3),
    max_replacements_in_flight: z._default(z.int().check(z.minimum(1), z.maximum(10_000)), 5),
    backoff_base_seconds: z._default(z.number().check(z.minimum(0), z.maximum(3600)), 5),
    backoff_max_seconds: z._default(z.number().check(z.minimum(0), z.maximum(86_400)), 600),
  }),
  repair_storm: section({
    max_quarantines: z._default(z.int().check(z.minimum(1)), 10),
    max_fraction: z._default(z.number().check(z.gt(0), z.maximum(1)), 0.1),
    window_minutes: z._default(z.int().check(z.minimum(1)), 60),
  }),
  repair_escalation: section({
    max_repairs: z._default(z.int().check(z.minimum(1)), 2),
    window_days: z._default(z.int().check(z.minimum(1)), 30),
  }),
  repair_sla: section({
    claim_minutes: z._default(z.int().check(z.minimum(1)), 60),
    repair_hours: z._default(z.int().check(z.minimum(1)), 24),
  }),
  sweep: section({
    // EventBridge Scheduler runs the sweep in AWS, in whole minutes only (the stack says so); locally any interval.
    interval_seconds: z._default(z.int().check(z.minimum(1), z.maximum(86_400)), 60),
    // An outbox event the stream has not delivered this long after its commit is the sweep's to deliver.
    outbox_grace_seconds: z._default(z.int().check(z.minimum(1), z.maximum(86_400)), 300),
    // Each org's capacity history keeps a point per this many seconds, taken by the sweep.
    capacity_history_seconds: z._default(z.int().check(z.minimum(1), z.maximum(86_400)), 300),
  }),
  migrations: section({
    // Write units a second a data migration may spend: what the live site can spare (docs/deploy.md, "Upgrading a site").
    max_write_units_per_second: z._default(z.int().check(z.minimum(1), z.maximum(40_000)), 200),
    // Parallel Scan segments of a table walk.
    segments: z._default(z.int().check(z.minimum(1), z.maximum(64)), 4),
    // A contract migration waits this long after the expand before it, so no invocation of the release before is left.
    contract_after_minutes: z._default(z.number().check(z.minimum(0), z.maximum(1_440)), 20),
    // How long each sweep run gives the migrations after its own work.
    sweep_seconds: z._default(z.int().check(z.minimum(1), z.maximum(600)), 20),
  }),
  validation: section({
    // The returns after which a machine is allocatable only once the site agent's validation passed; [] turns it off.
    after: z._default(z.array(z.enum(['repair', 'maintenance', 'registration'])), ['repair', 'maintenance', 'registration']),
    // Handed to the agent as it is.
    suite: z._default(z.string().check(z.minLength(1), z.maxLength(100)), 'standard'),
    // Past it the validation raises ValidationStuck (once) and the agent is asked again.
    timeout_minutes: z._default(z.number().check(z.gt(0), z.maximum(10_080)), 120),
  }),
  site_agent: section({
    report_timeout_seconds: z._default(z.int().check(z.minimum(1), z.maximum(86_400)), 60),
    // The keys the controller signs its calls to the agent with (docs/deploy.md); required for a deployed site.
    signing_secret_arn: z.optional(secretArn),
    vpc: z.optional(agentVpc),
  }),
  api: section({
    rate_limit: z._default(throttle.rate_limit, 200),
    burst_limit: z._default(throttle.burst_limit, 400),
    // Keyed by route key; each must be a route of the API (checkRouteOverrides, at synth and at start-up).
    routes: z._default(z.record(routeKey, z.strictObject({ rate_limit: z.optional(throttle.rate_limit), burst_limit: z.optional(throttle.burst_limit) })), {}),
  }),
  lambda: section({
    tenant_reserved_concurrency: z._default(z.int().check(z.minimum(1), z.maximum(10_000)), 100),
    admin_reserved_concurrency: z._default(z.int().check(z.minimum(1), z.maximum(10_000)), 10),
    site_agent_reserved_concurrency: z._default(z.int().check(z.minimum(1), z.maximum(10_000)), 20),
    // The account's concurrent executions quota in the site's region: the reservations above must leave Lambda its
    // unreserved 100 of it, or the deploy fails (checked at synth).
    account_concurrency: z._default(z.int().check(z.minimum(100), z.maximum(1_000_000)), 1000),
  }),
  maintenance: section({
    // A planned maintenance's hand-back deadline is at least this far from its declaration (NVIDIA OFM: 2 weeks).
    min_hand_back_days: z._default(z.int().check(z.minimum(0), z.maximum(365)), 14),
    // An emergency's may be this soon; 0 means at once.
    emergency_min_hand_back_minutes: z._default(z.int().check(z.minimum(0), z.maximum(10_080)), 15),
    // MaintenanceHandBackDue goes out this long before an org's deadline.
    notice_hours: z._default(z.int().check(z.minimum(0), z.maximum(8_760)), 24),
    // The backstop of the stream: a maintenance whose machines wait is looked at again this long after its last step.
    resync_seconds: z._default(z.int().check(z.minimum(1), z.maximum(86_400)), 300),
  }),
  simulator: section({
    machines: z._default(z.array(simulatedMachineGroup), [
      { type: 'gb200', count: 16, racks: 2 },
      { type: 'h100', count: 16, racks: 2 },
    ]),
    heartbeat_interval_seconds: z._default(z.number().check(z.gt(0), z.maximum(3600)), 5),
    // The roster in this many parts a beat (1, 2, 4 ... 64), as an agent whose roster outgrows one beat sends it.
    heartbeat_parts: z._default(z.union(ROSTER_PART_COUNTS.map((n) => z.literal(n))), 1),
    provision_ms: z._default(z.int().check(z.minimum(0), z.maximum(600_000)), 200),
    cleanup_ms: z._default(z.int().check(z.minimum(0), z.maximum(600_000)), 200),
    maintenance_ms: z._default(z.int().check(z.minimum(0), z.maximum(600_000)), 200),
    validation_ms: z._default(z.int().check(z.minimum(0), z.maximum(600_000)), 200),
  }),
});

export type SiteConfig = z.infer<typeof siteConfigSchema>;

export class SiteConfigError extends Error {
  override name = 'SiteConfigError';
}

/** Parses and validates a site's TOML; every problem names its key, e.g. `heartbeat.timeout_seconds`. */
export function parseSiteConfig(toml: string, source = 'site config'): SiteConfig {
  let raw: unknown;
  try {
    raw = parseToml(toml);
  } catch (error) {
    throw new SiteConfigError(`${source}: not valid TOML: ${(error as Error).message}`);
  }
  const result = siteConfigSchema.safeParse(raw);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => {
      const keys = issue.code === 'unrecognized_keys' ? issue.keys.map((k) => keyPath([...issue.path, k])) : [];
      const where = keys.length > 0 ? keys.join(', ') : keyPath(issue.path) || '(top level)';
      const message =
        issue.code === 'unrecognized_keys' ? 'unknown key' : issue.code === 'invalid_key' ? issue.issues.map((i) => i.message).join('; ') : issue.message;
      return `${where}: ${message}`;
    });
    throw new SiteConfigError(`${source}: ${problems.join('; ')}`);
  }
  return result.data;
}

/** A key as TOML spells it: `api.routes."POST /v2/org/{org}/nico/instance".rate_limit`. */
const keyPath = (path: readonly PropertyKey[]) =>
  path.map((segment) => (typeof segment === 'string' && !/^[A-Za-z0-9_-]+$/.test(segment) ? JSON.stringify(segment) : String(segment))).join('.');

/**
 * `[api.routes."<METHOD> <path>"]` must name routes the API serves (`routeKeys`, from the route table): an override
 * of an unknown route would throttle nothing, and API Gateway refuses a stage whose settings name one.
 */
export function checkRouteOverrides(config: SiteConfig, routeKeys: readonly string[], source = 'site config'): void {
  const known = new Set(routeKeys);
  const unknown = Object.keys(config.api.routes).filter((key) => !known.has(key));
  if (unknown.length > 0) {
    throw new SiteConfigError(
      `${source}: ${unknown.map((key) => `${keyPath(['api', 'routes', key])}: no such route`).join('; ')} (the API's routes are listed by GET /openapi.json)`,
    );
  }
}

export const defaultSiteConfig = (): SiteConfig => siteConfigSchema.parse({});
