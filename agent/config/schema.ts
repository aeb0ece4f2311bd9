// The agent's own config file (TOML), docs/agent.md "Config": every key checked at start, a misspelt one refused, so a
// site never runs with a setting it did not mean.

import { z } from 'zod';
import { ROSTER_PART_COUNTS } from '#config/roster-parts.ts';
import { machineIdRule } from '#site/machine-id.ts';

/** A secret is never written in the config itself: it names where to read it. */
export const secretRef = z.union([z.strictObject({ env: z.string().min(1) }), z.strictObject({ file: z.string().min(1) })]);
export type SecretRef = z.infer<typeof secretRef>;

const seconds = (max: number) => z.number().positive().max(max);

const hook = z.strictObject({
  /** Run with `sh -c`; what it needs to know arrives in its environment (docs/agent.md "Hooks"). */
  command: z.string().min(1),
  timeout_seconds: seconds(86_400),
});
export type HookConfig = z.infer<typeof hook>;

const ipmiBmc = z.strictObject({
  driver: z.literal('ipmi'),
  host: z.string().min(1),
  port: z.number().int().min(1).max(65_535).default(623),
  user: z.string().min(1),
  password: secretRef,
  /** RMCP+ cipher suite: naming it spares ipmitool asking the BMC for its list, which some BMCs answer slowly or never. */
  cipher_suite: z.number().int().min(0).max(17).default(3),
  timeout_seconds: seconds(300).default(10),
});

const redfishBmc = z.strictObject({
  driver: z.literal('redfish'),
  /** The BMC's base URL, e.g. https://10.0.0.12; the service root is `/redfish/v1`. */
  url: z.string().url(),
  /** The system's `@odata.id`; absent: the only member of the service root's Systems collection. */
  system: z.string().startsWith('/').optional(),
  user: z.string().min(1),
  password: secretRef,
  auth: z.enum(['session', 'basic']).default('session'),
  /** A PEM file of the CA that signed the BMC's certificate; BMCs mostly carry their own. */
  ca_file: z.string().min(1).optional(),
  /** false accepts any certificate: only for a lab behind its own network. */
  tls_verify: z.boolean().default(true),
  timeout_seconds: seconds(300).default(20),
});

export const bmcConfig = z.discriminatedUnion('driver', [ipmiBmc, redfishBmc]);
export type BmcConfig = z.infer<typeof bmcConfig>;
export type IpmiBmcConfig = z.infer<typeof ipmiBmc>;
export type RedfishBmcConfig = z.infer<typeof redfishBmc>;

const probe = z.discriminatedUnion('kind', [
  /** `nvidia-smi -q -x` run on the machine: the command says how to reach it (ssh, a node exporter's exec...). */
  z.strictObject({ kind: z.literal('nvidia-smi'), command: z.string().min(1).default('nvidia-smi -q -x'), timeout_seconds: seconds(600).default(30) }),
  z.strictObject({ kind: z.literal('dcgm'), command: z.string().min(1).default('dcgmi health -c -j'), timeout_seconds: seconds(600).default(30) }),
  /** The BMC's event log and sensor thresholds, through the machine's own BMC driver. */
  z.strictObject({ kind: z.literal('sel') }),
  /** Anything else: prints `{ "alerts": [{ id, message, classifications }] }`. */
  z.strictObject({ kind: z.literal('command'), command: z.string().min(1), timeout_seconds: seconds(600).default(30) }),
]);
export type ProbeConfig = z.infer<typeof probe>;

const machine = z.strictObject({
  id: z.string().regex(machineIdRule.pattern, machineIdRule.message),
  type: z.string().min(1),
  rack: z.string().min(1),
  nvlink_domain: z.string().min(1).optional(),
  /** GPUs the type has: a probe that sees fewer reports the machine. */
  gpus: z.number().int().min(0).max(1024).optional(),
  bmc: bmcConfig,
  probes: z.array(probe).max(16).default([]),
});
export type MachineConfig = z.infer<typeof machine>;

const signing = z
  .strictObject({
    /** The Secrets Manager secret's JSON shape, `{ "keys": [{ "id", "secret" }], "current": "<id>" }`, in a file. */
    keys_file: z.string().min(1).optional(),
    keys: z
      .array(z.strictObject({ id: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/), secret: secretRef }))
      .max(8)
      .optional(),
  })
  .refine((s) => (s.keys_file === undefined) !== (s.keys === undefined), { message: 'give either keys_file or keys, not both or neither' });

const tokenSource = z.union([
  secretRef,
  /** A program that prints a token (an OAuth client-credentials call, say); asked again after `cache_seconds`. */
  z.strictObject({ command: z.string().min(1), cache_seconds: seconds(86_400).default(300) }),
  /** The local runner's dev issuer (`POST /_local/token`): never in a deployed site. */
  z.strictObject({ local_runner: z.literal(true) }),
]);
export type TokenSourceConfig = z.infer<typeof tokenSource>;

export const agentConfigSchema = z
  .strictObject({
    agent: z.strictObject({
      listen_host: z.string().min(1).default('127.0.0.1'),
      listen_port: z.number().int().min(0).max(65_535),
      /** Append-only journal of every accepted call (docs/agent.md "Journal"). */
      journal: z.string().min(1),
      heartbeat_interval_seconds: seconds(3_600).default(10),
      heartbeat_parts: z.union(ROSTER_PART_COUNTS.map((n) => z.literal(n))).default(1),
      probe_interval_seconds: seconds(86_400).default(60),
      /** Delays between attempts at a report the controller did not take; then the next restart tries again. */
      report_retry_seconds: z.array(seconds(3_600)).max(32).default([1, 2, 5, 10, 30, 60]),
    }),
    controller: z.strictObject({ url: z.string().url(), token: tokenSource }),
    signing,
    hooks: z.strictObject({ provision: hook.optional(), cleanup: hook.optional(), validate: hook.optional(), maintenance: hook.optional() }).default({}),
    machines: z.array(machine).min(1).max(100_000),
  })
  .superRefine((config, ctx) => {
    const seen = new Set<string>();
    config.machines.forEach((m, i) => {
      if (seen.has(m.id)) ctx.addIssue({ code: 'custom', path: ['machines', i, 'id'], message: `machine ${m.id} is listed twice` });
      seen.add(m.id);
    });
  });
export type AgentConfig = z.infer<typeof agentConfigSchema>;
