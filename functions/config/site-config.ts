import { z } from 'zod';
import { parse as parseToml } from 'smol-toml';

// Every section is strict so that a misspelt key stops start-up instead of being silently ignored.
const section = <T extends z.ZodRawShape>(shape: T) => z.strictObject(shape).prefault({} as never);

const simulatedMachineGroup = z.strictObject({
  type: z.string().min(1),
  count: z.number().int().min(1).max(100_000),
  racks: z.number().int().min(1).default(1),
});

export const siteConfigSchema = z.strictObject({
  site: section({
    name: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'lower-case letters, digits and dashes').default('local'),
    agent_url: z.url().optional(),
  }),
  auth: section({
    issuer: z.string().min(1).default('https://fleetward.local/'),
    audience: z.string().min(1).default('fleetward'),
  }),
  auto_machine_repair_plugin: section({ enabled: z.boolean().default(true) }),
  dashboard: section({ enabled: z.boolean().default(true) }),
  instance_create_retry: section({
    max_attempts: z.number().int().min(1).max(10).default(3),
    base_delay_ms: z.number().int().min(0).max(10_000).default(250),
    timeout_ms: z.number().int().min(100).max(120_000).default(10_000),
  }),
  heartbeat: section({ timeout_seconds: z.number().int().min(1).max(86_400).default(30) }),
  site_agent: section({ report_timeout_seconds: z.number().int().min(1).max(86_400).default(60) }),
  meta_instance: section({
    max_consecutive_failures: z.number().int().min(1).max(100).default(3),
    max_replacements_in_flight: z.number().int().min(1).max(10_000).default(5),
    backoff_base_seconds: z.number().min(0).max(3600).default(5),
    backoff_max_seconds: z.number().min(0).max(86_400).default(600),
  }),
  repair_storm: section({
    max_quarantines: z.number().int().min(1).default(10),
    max_fraction: z.number().gt(0).max(1).default(0.1),
    window_minutes: z.number().int().min(1).default(60),
  }),
  repair_escalation: section({
    max_repairs: z.number().int().min(1).default(2),
    window_days: z.number().int().min(1).default(30),
  }),
  repair_sla: section({
    claim_minutes: z.number().int().min(1).default(60),
    repair_hours: z.number().int().min(1).default(24),
  }),
  simulator: section({
    machines: z
      .array(simulatedMachineGroup)
      .default([
        { type: 'gb200', count: 16, racks: 2 },
        { type: 'h100', count: 16, racks: 2 },
      ]),
    heartbeat_interval_seconds: z.number().gt(0).max(3600).default(5),
    provision_ms: z.number().int().min(0).max(600_000).default(200),
    cleanup_ms: z.number().int().min(0).max(600_000).default(200),
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
      const keys = issue.code === 'unrecognized_keys' ? issue.keys.map((k) => [...issue.path, k].join('.')) : [];
      const where = keys.length > 0 ? keys.join(', ') : issue.path.join('.') || '(top level)';
      return `${where}: ${issue.code === 'unrecognized_keys' ? 'unknown key' : issue.message}`;
    });
    throw new SiteConfigError(`${source}: ${problems.join('; ')}`);
  }
  return result.data;
}

export const defaultSiteConfig = (): SiteConfig => siteConfigSchema.parse({});
